import { describe, expect, it } from 'vitest';
import { shareComponents } from './openapi-components.js';

const errorReply = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});
const chat = { title: 'Chat', type: 'object', properties: { chatId: { type: 'string' }, title: { type: 'string' } } };

function document() {
  return {
    paths: {
      '/a': {
        get: {
          responses: {
            200: { description: 'ok', content: { 'application/json': { schema: { type: 'array', items: structuredClone(chat) } } } },
            401: errorReply('Missing key.'),
            415: errorReply('Not JSON.'),
          },
        },
      },
      '/b': {
        post: {
          requestBody: {
            content: { 'application/json': { schema: structuredClone(chat), examples: { one: { value: { title: 'Chat' } } } } },
          },
          responses: { 200: { description: 'ok' }, 401: errorReply('Missing key.'), 415: errorReply('Only images.') },
        },
      },
    },
    webhooks: { CHAT: { post: { requestBody: { content: { 'application/json': { schema: structuredClone(chat) } } } } } },
    components: { schemas: { Error: { type: 'object' } } },
  };
}

describe('shareComponents', () => {
  it('shares the standard reply of a status and keeps the ones that say more', () => {
    const doc = shareComponents(document()) as any;
    expect(doc.components.responses).toEqual({ Unauthorized: errorReply('Missing key.') });
    expect(doc.paths['/a'].get.responses['401']).toEqual({ $ref: '#/components/responses/Unauthorized' });
    expect(doc.paths['/b'].post.responses['401']).toEqual({ $ref: '#/components/responses/Unauthorized' });
    // Two different 415 texts, each used once: nothing to share.
    expect(doc.paths['/b'].post.responses['415']).toEqual(errorReply('Only images.'));
  });

  it('moves a schema named in code to components.schemas and refers to it everywhere, data left alone', () => {
    const doc = shareComponents(document()) as any;
    expect(doc.components.schemas.Chat).toEqual(chat);
    const ref = { $ref: '#/components/schemas/Chat' };
    expect(doc.paths['/a'].get.responses['200'].content['application/json'].schema.items).toEqual(ref);
    expect(doc.paths['/b'].post.requestBody.content['application/json'].schema).toEqual(ref);
    expect(doc.webhooks.CHAT.post.requestBody.content['application/json'].schema).toEqual(ref);
    // An example whose data has a `title` field is data, not a schema.
    expect(doc.paths['/b'].post.requestBody.content['application/json'].examples.one.value).toEqual({ title: 'Chat' });
  });

  it('refuses two different schemas under one name', () => {
    const doc = document() as any;
    doc.webhooks.CHAT.post.requestBody.content['application/json'].schema.properties.extra = { type: 'string' };
    expect(() => shareComponents(doc)).toThrow(/two different schemas are named Chat/);
  });
});

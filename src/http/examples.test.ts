/** The request-example composer: the rule of docs/routes.md ("Request examples"), case by case. */
import { describe, expect, it } from 'vitest';
import { ExampleComposer, NoExample } from './examples.js';
import { finishOpenApiDocument } from './openapi.js';

const composer = new ExampleComposer();
const noExample = (schema: Record<string, unknown>) => {
  try {
    composer.compose(schema);
  } catch (error) {
    expect(error).toBeInstanceOf(NoExample);
    return (error as NoExample).where;
  }
  throw new Error('composed an example');
};

describe('ExampleComposer', () => {
  it("takes a field's example, const, default or first enum value, and only the required fields", () => {
    expect(
      composer.compose({
        type: 'object',
        additionalProperties: false,
        required: ['number', 'kind', 'presence', 'limit', 'url'],
        properties: {
          number: { type: 'string', pattern: '^[0-9]{7,15}$', examples: ['5511999990000', '5511999990001'] },
          kind: { const: 'text' },
          presence: { type: 'string', enum: ['composing', 'paused'] },
          limit: { type: 'integer', minimum: 1, default: 100 },
          url: { type: 'string', format: 'uri' },
          caption: { type: 'string', examples: ['optional, left out'] },
        },
      }),
    ).toEqual({ number: '5511999990000', kind: 'text', presence: 'composing', limit: 100, url: 'https://example.com/' });
  });

  it('fills minProperties with optional fields that have an example first', () => {
    expect(
      composer.compose({
        type: 'object',
        minProperties: 2,
        required: ['id'],
        properties: {
          id: { type: 'string', examples: ['3'] },
          color: { type: 'integer', minimum: 0, maximum: 19 },
          name: { type: 'string', examples: ['Paid'] },
        },
      }),
    ).toEqual({ id: '3', name: 'Paid' });
  });

  it('makes minItems items, distinct ones from the items’ examples', () => {
    const options = { type: 'array', minItems: 2, uniqueItems: true, items: { type: 'string', examples: ['Morning', 'Evening'] } };
    expect(composer.compose(options)).toEqual(['Morning', 'Evening']);
    expect(noExample({ ...options, items: { type: 'string', examples: ['Morning'] } })).toContain('2 distinct items');
    expect(composer.compose({ type: 'array', items: { type: 'integer', minimum: 5 } })).toEqual([5]);
  });

  it('takes the first union branch whose value passes the union', () => {
    const union = { anyOf: [{ type: 'string', maxLength: 2, examples: ['too long'] }, { type: 'null' }] };
    expect(composer.compose(union)).toBeNull();
    expect(composer.compose({ anyOf: [{ type: 'string', format: 'email' }, { type: 'null' }] })).toBe('maria@example.com');
  });

  it('makes up no text: a string without an example, value or known format has no example, named by its place', () => {
    expect(
      noExample({
        type: 'object',
        required: ['contacts'],
        properties: {
          contacts: { type: 'array', items: { type: 'object', required: ['fullName'], properties: { fullName: { type: 'string' } } } },
        },
      }),
    ).toBe('.contacts[].fullName');
  });

  it('refuses a composed value that does not pass the schema', () => {
    expect(noExample({ type: 'string', pattern: '^[0-9]+$', examples: ['abc'] })).toContain('the composed body');
  });
});

describe('finishOpenApiDocument', () => {
  it('adds a composed example to a JSON body without one, keeps a hand-written one, and adds none it cannot make', () => {
    const body = (schema: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      requestBody: { required: true, content: { 'application/json': { schema, ...extra } } },
    });
    const document = finishOpenApiDocument({
      paths: {
        '/api/v1/chat/pin': {
          post: body({ type: 'object', required: ['chatId'], properties: { chatId: { type: 'string', examples: ['5511999990000'] } } }),
        },
        '/api/v1/send/text': { post: body({ type: 'object', properties: { text: { type: 'string' } } }, { example: { text: 'Hello' } }) },
        '/api/v1/group/subject': { post: body({ type: 'object', required: ['subject'], properties: { subject: { type: 'string' } } }) },
      },
    });
    const json = (route: string) => (document.paths as Record<string, any>)[route].post.requestBody.content['application/json'];
    expect(json('/api/v1/chat/pin').example).toEqual({ chatId: '5511999990000' });
    expect(json('/api/v1/send/text').example).toEqual({ text: 'Hello' });
    expect(json('/api/v1/group/subject')).not.toHaveProperty('example');
  });
});

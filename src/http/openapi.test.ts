/**
 * The OpenAPI contract: one stable operationId per operation (operationIdOf), every operation
 * described and secured, and a `webhooks` section whose schemas real events of all 13 types, made by
 * a sandbox gateway, pass.
 */
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, recordEvents, startGateway, uniqueNumber, waitFor, type TestGateway } from '../../test/support/gateway.js';
import { EVENT_TYPES } from '../network/port.js';
import { sandboxAccount } from '../../test/support/social.js';
import { operationIdOf } from './openapi.js';

// ajv-formats' CommonJS default export, typed for the ESM import (as in app.ts).
const addFormats = addFormatsModule as unknown as <T extends Ajv | Ajv2020>(ajv: T) => T;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Operations whose JSON body may go without a request example, each with the reason. None today. */
const WITHOUT_EXAMPLE: Record<string, string> = {};

/** Refusals because an example names a server outside (Chatwoot at chatwoot.example.com) that tests cannot reach. */
const UNREACHABLE = new Set(['chatwoot_unreachable']);

describe('operationIdOf', () => {
  it('is the method and the words of the path after /api/v1, parameters as By<Name>', () => {
    expect(operationIdOf('POST', '/api/v1/send/text')).toBe('postSendText');
    expect(operationIdOf('delete', '/api/v1/instance/delete/{instance_id}')).toBe('deleteInstanceDeleteByInstanceId');
    expect(operationIdOf('GET', '/api/v1/instance/webhook-dead-letters/{instance_id}')).toBe('getInstanceWebhookDeadLettersByInstanceId');
    expect(operationIdOf('get', '/api/v1/chat/:chat_id')).toBe('getChatByChatId');
  });
});

describe('the served document', () => {
  let gw: TestGateway;
  let document: any;

  beforeAll(async () => {
    gw = await startGateway();
    document = (await gw.api('GET', '/api/v1/openapi.json')).body;
  });
  afterAll(async () => gw?.stop());

  it('gives every operation a unique operationId by the rule, tags it knows, a summary, a description and its security', () => {
    const seen = new Set<string>();
    const tags = new Set(document.tags.map((tag: { name: string }) => tag.name));
    let operations = 0;
    for (const [route, item] of Object.entries<Record<string, any>>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        if (!METHODS.includes(method)) continue;
        operations += 1;
        const where = `${method.toUpperCase()} ${route}`;
        expect(operation.operationId, where).toBe(operationIdOf(method, route));
        expect(seen.has(operation.operationId), `${where}: ${operation.operationId} twice`).toBe(false);
        seen.add(operation.operationId);
        expect(operation.summary, where).toBeTruthy();
        expect(operation.description, where).toBeTruthy();
        expect(Array.isArray(operation.security), where).toBe(true);
        for (const tag of operation.tags ?? []) expect(tags.has(tag), `${where}: tag ${tag}`).toBe(true);
      }
    }
    expect(operations).toBeGreaterThan(150);
    // Public routes say so (an empty list), keyed ones name their scheme.
    expect(document.paths['/api/v1/server/ok'].get.security).toEqual([]);
    expect(document.paths['/api/v1/send/text'].post.security).not.toEqual([]);
  });

  it('describes the WebSocket stream: its query, the 101 upgrade, the refusals before it and the close codes', async () => {
    const stream = document.paths['/api/v1/ws']?.get;
    expect(stream).toBeDefined();
    // The deprecated unprefixed twin is left out, as for every route; the description names it.
    expect(document.paths['/ws']).toBeUndefined();
    expect(stream.operationId).toBe('getWs');
    expect(stream.security).toEqual([]);
    expect(stream.parameters.map((p: any) => [p.in, p.name, p.required])).toEqual([
      ['query', 'token', true],
      ['query', 'instanceId', true],
    ]);
    expect(Object.keys(stream.responses).sort()).toEqual(['101', '400', '401', '403', '429']);
    expect(stream.responses['101'].content).toBeUndefined();
    expect(Object.keys(stream.responses['101'].headers)).toEqual(['Upgrade', 'Connection', 'Sec-WebSocket-Accept']);
    for (const status of ['400', '401', '403', '429']) {
      expect(stream.responses[status].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    }
    for (const code of ['validation_failed', 'invalid_api_key', 'token_expired', 'wrong_instance', 'too_many_streams']) {
      expect(JSON.stringify(stream.responses)).toContain(`\`${code}\``);
    }
    for (const close of ['4400', '4401', '4403', '4404', '1013']) expect(stream.description).toContain(`\`${close}\``);
    expect(stream.description).toMatch(/EventEnvelope/);
    expect(stream.description).toMatch(/`webhooks`/);
    // The admin socket stays out (it refuses with close codes, not HTTP answers).
    expect(Object.keys(document.paths).filter((path) => path.endsWith('/ws'))).toEqual(['/api/v1/ws']);

    // What the document says is what the route does: a plain GET meets the same checks as an upgrade.
    const missing = await gw.api('GET', '/api/v1/ws?token=x');
    expect([missing.status, missing.body.code]).toEqual([400, 'validation_failed']);
    const unknown = await gw.api('GET', '/api/v1/ws?token=not-a-token&instanceId=x');
    expect([unknown.status, unknown.body.code]).toEqual([401, 'invalid_api_key']);
  });

  it('gives every JSON request body an example that passes its schema, and its route accepts every example', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    // A web-interface owner for the routes that take only a user's JWT (its password is not the examples' one).
    const owner = await gw.api('POST', '/api/v1/auth/register', { body: { email: 'owner@example.org', password: 'owner password 0123' } });
    expect(owner.status, JSON.stringify(owner.body)).toBe(201);
    // The key an operation's security asks for: the admin key where it is accepted, else the
    // instance token, else the user's JWT; none on public routes. Authentication runs before
    // validation, so a wrong key would hide a validation refusal.
    const credentials = (operation: any) => {
      const schemes = new Set((operation.security as Record<string, unknown>[]).flatMap((s) => Object.keys(s)));
      if (schemes.has('apikey')) return { key: schemes.has('bearer') ? gw.adminKey : a.token };
      if (schemes.has('bearer')) return { headers: { authorization: `Bearer ${owner.body.accessToken}` } };
      return {};
    };
    // Path parameters from their examples (an id that does not exist answers 404, after validation).
    const pathOf = (route: string, operation: any) =>
      route.replace(/\{([^}]+)\}/g, (_, name: string) => {
        const parameter = (operation.parameters ?? []).find((p: any) => p.in === 'path' && p.name === name);
        return encodeURIComponent(String(parameter?.schema?.examples?.[0] ?? parameter?.example ?? 'example'));
      });
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    // Body schemas refer to shared components: validated in the document, by JSON pointer.
    ajv.addSchema(document, 'examples.json');
    const pointer = (...parts: string[]) => parts.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

    const missing: string[] = [];
    let bodies = 0;
    let examples = 0;
    for (const [route, item] of Object.entries<Record<string, any>>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        const json = operation?.requestBody?.content?.['application/json'];
        if (!METHODS.includes(method) || !json) continue;
        bodies += 1;
        const where = `${method.toUpperCase()} ${route}`;
        // @fastify/swagger lifts a body schema's `examples` to the media type (`example`, or `examples`
        // when several); the finishing step composes one for the others (http/examples.ts).
        const given = json.examples
          ? Object.values<any>(json.examples).map((e) => e.value)
          : json.example !== undefined
            ? [json.example]
            : [];
        if (given.length === 0 && !(where in WITHOUT_EXAMPLE)) missing.push(where);
        const validate = ajv.getSchema(
          `examples.json#/${pointer('paths', route, method, 'requestBody', 'content', 'application/json', 'schema')}`,
        )!;
        const path = pathOf(route, operation);
        // The key reaches validation: a body that cannot pass (an array, never an object) is refused by it.
        const probe = await gw.api(method.toUpperCase(), path, { ...credentials(operation), body: [] });
        expect(probe.body?.code, `${where} with the key its security asks for: ${JSON.stringify(probe.body)}`).toBe('validation_failed');
        for (const example of given) {
          examples += 1;
          expect(validate(example), `${where}: ${JSON.stringify(example)} ${ajv.errorsText(validate.errors)}`).toBe(true);
          const res = await gw.api(method.toUpperCase(), path, { ...credentials(operation), body: example });
          // Validation passed (the schema's and the service's own checks); what happens next may still
          // refuse it (a message id that is not stored: 404; a state it conflicts with: 409), never with a 5xx.
          expect(res.body?.code, `${where}: ${JSON.stringify(res.body)}`).not.toBe('validation_failed');
          if (!UNREACHABLE.has(res.body?.code)) expect(res.status, `${where}: ${JSON.stringify(res.body)}`).toBeLessThan(500);
        }
      }
    }
    expect(missing, 'operations with a JSON body and no request example').toEqual([]);
    expect(bodies).toBeGreaterThan(100);
    expect(examples).toBeGreaterThanOrEqual(bodies - Object.keys(WITHOUT_EXAMPLE).length);
    // A hand-written example wins over a composed one.
    expect(document.paths['/api/v1/send/text'].post.requestBody.content['application/json'].example).toEqual({
      number: '5511999990001',
      text: 'Your order #1042 has shipped.',
    });
  });

  it('describes a webhook per event type, and real events of all 13 types pass its schemas', async () => {
    expect(Object.keys(document.webhooks).sort()).toEqual([...EVENT_TYPES].sort());
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(document, 'waygate.json');
    const validators = Object.fromEntries(
      EVENT_TYPES.map((type) => [type, ajv.getSchema(`waygate.json#/webhooks/${type}/post/requestBody/content/application~1json/schema`)!]),
    );

    const events = recordEvents(gw);
    const contact = uniqueNumber();
    const a = await connectedInstance(gw, uniqueNumber());
    // A WhatsApp Business account: labels exist only there.
    await sandboxAccount(gw, { number: a.number, business: true });
    const call = async (method: string, route: string, body: unknown, key = a.token) => {
      const res = await gw.api(method, route, { key, body });
      expect(res.status, `${route}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
      return res.body;
    };
    await call('POST', '/api/v1/sandbox/messages', { from: contact, to: a.number, text: 'hello' }, gw.adminKey);
    const sent = await call('POST', '/api/v1/send/text', { number: contact, text: 'hi back' });
    await call('POST', '/api/v1/sandbox/read', { from: contact, to: a.number, messageIds: [sent.key.id] }, gw.adminKey);
    await call('POST', '/api/v1/sandbox/presence', { from: contact, to: a.number, presence: 'available' }, gw.adminKey);
    await call('POST', '/api/v1/sandbox/presence', { from: contact, to: a.number, presence: 'composing' }, gw.adminKey);
    await call('POST', '/api/v1/sandbox/calls', { from: contact, to: a.number, isVideo: false }, gw.adminKey);
    await call('POST', '/api/v1/chat/history/request', { chatId: contact, count: 5 });
    await call('POST', '/api/v1/label/create', { name: 'VIP' });
    await call('POST', '/api/v1/user/block', { number: uniqueNumber() });
    await call('POST', '/api/v1/group/create', { subject: 'Contract', participants: [contact] });
    await call('POST', '/api/v1/newsletter/create', { name: 'Contract news' });
    // QRCODE: a second instance, connected but not scanned.
    const b = await gw.api('POST', '/api/v1/instance/create', {
      key: gw.adminKey,
      body: { instanceName: `qr-${uniqueNumber()}`, network: 'sandbox' },
    });
    await call('POST', '/api/v1/instance/connect', undefined, b.body.token);

    for (const type of EVENT_TYPES) {
      const event = await waitFor(() => events.all.find((e) => e.event === type), 10_000, `a ${type} event`);
      const valid = validators[type]!(event);
      expect(valid, `${type}: ${JSON.stringify(validators[type]!.errors)}`).toBe(true);
    }
    // And a schema that checks something: an event of one type does not pass another's.
    const message = events.all.find((e) => e.event === 'MESSAGE');
    expect(validators.CONNECTION!(message)).toBe(false);
  });
});

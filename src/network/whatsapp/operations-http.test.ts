/**
 * Groups, communities and newsletters of a WhatsApp instance through the gateway: the HTTP routes
 * reach the driver's translation (no longer 501) and WhatsApp's refusals come out as the same 4xx
 * the sandbox gives; and the port contract — the WhatsApp driver's answers, built from recorded
 * replies, have the sandbox's fields and types. The local WhatsApp stand-in answers the queries.
 */
import { QueryIds } from 'baileys';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, startGateway, uniqueNumber, type TestGateway, type TestInstance } from '../../../test/support/gateway.js';
import { GROUP, groupNode, mexResult, NEWSLETTER, rawNewsletter, subGroupsNode } from './fixtures/baileys-payloads.js';
import { FakeWaServer, iqChild } from './fixtures/fake-wa-server.js';
import { pairedThroughApi, serveGroupMetadata } from './fixtures/linked-session.js';

let server: FakeWaServer;
let gw: TestGateway;
let instance: TestInstance;

beforeAll(async () => {
  server = new FakeWaServer();
  const url = await server.start();
  gw = await startGateway({ env: { WHATSAPP_WS_URL: url, WHATSAPP_QR_TIMEOUT_MS: '5000' } });
  ({ instance } = await pairedThroughApi(gw, server, '5511912345678'));
});

afterEach(() => server.clearIqHooks());

afterAll(async () => {
  await gw.stop();
  await server.stop();
});

describe('whatsapp capabilities through the API', () => {
  it('GET /group/info answers the translated group; WhatsApp 403 and 404 become the API 403 and 404', async () => {
    serveGroupMetadata(server, GROUP, groupNode({ id: GROUP, subject: 'Team' }));
    const info = await gw.api('GET', `/api/v1/group/info?groupId=${encodeURIComponent(GROUP)}`, { key: instance.token });
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({
      groupId: GROUP,
      subject: 'Team',
      size: 3,
      participants: [{ role: 'superadmin' }, { role: 'admin' }, { role: 'member' }],
    });

    server.onIq({ xmlns: 'w:g2', child: 'promote' }, { error: { code: 403, text: 'forbidden' } });
    const promote = await gw.api('POST', '/api/v1/group/participants/promote', {
      key: instance.token,
      body: { groupId: GROUP, participants: ['5511988887777'] },
    });
    expect(promote.status).toBe(403);
    expect(promote.body.error).toMatch(/not allowed to promote participants/);

    const unknown = '120363000000099999@g.us';
    server.onIq({ xmlns: 'w:g2', to: unknown }, { error: { code: 404, text: 'item-not-found' } });
    const missing = await gw.api('GET', `/api/v1/group/info?groupId=${encodeURIComponent(unknown)}`, { key: instance.token });
    expect(missing.status).toBe(404);
  });

  it('GET /newsletter/info answers the channel; /newsletter/list is 501 with the reason', async () => {
    server.onIq((iq) => iq.attrs.xmlns === 'w:mex' && iqChild(iq)?.attrs.query_id === QueryIds.METADATA, {
      content: [mexResult({ data: { xwa2_newsletter: rawNewsletter() } })],
    });
    const info = await gw.api('GET', `/api/v1/newsletter/info?newsletterId=${encodeURIComponent(NEWSLETTER)}`, { key: instance.token });
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({ newsletterId: NEWSLETTER, name: 'Our channel', role: 'owner', followers: 1234 });
    const list = await gw.api('GET', '/api/v1/newsletter/list', { key: instance.token });
    expect(list.status).toBe(501);
    expect(list.body.error).toMatch(/followed newsletters/);
  });

  it('GET /community/info of a plain group is 404', async () => {
    serveGroupMetadata(server, GROUP, groupNode({ id: GROUP }));
    const info = await gw.api('GET', `/api/v1/community/info?communityId=${encodeURIComponent(GROUP)}`, { key: instance.token });
    expect(info.status).toBe(404);
  });

  it("the port contract: group, community and newsletter answers have the sandbox's shape (same fields, same types)", async () => {
    const sandbox = await connectedInstance(gw, uniqueNumber());
    const community = '120363000000077701@g.us';
    const announce = '120363000000077702@g.us';
    const linkedGroup = '120363000000077703@g.us';
    serveGroupMetadata(server, GROUP, groupNode({ id: GROUP, description: 'Our team' }));
    serveGroupMetadata(server, community, groupNode({ id: community, description: 'Our street', flags: ['parent'] }));
    server.onIq((iq) => iq.attrs.to === community && iqChild(iq)?.tag === 'sub_groups', {
      content: [
        subGroupsNode([
          { id: announce, subject: 'Street', announce: true, size: 3 },
          { id: linkedGroup, subject: 'Team' },
        ]),
      ],
    });
    server.onIq((iq) => iq.attrs.xmlns === 'w:mex' && iqChild(iq)?.attrs.query_id === QueryIds.METADATA, {
      content: [mexResult({ data: { xwa2_newsletter: rawNewsletter() } })],
    });

    const port = async (of: TestInstance) => gw.sessions.connected(await gw.instances.get(of.id));
    const onSandbox = await port(sandbox);
    const onWhatsApp = await port(instance);
    const group = await onSandbox.groups!.create('Team', [], 'Our team');
    const linked = await onSandbox.groups!.create('Linked', []);
    const street = await onSandbox.communities!.create('Street', 'Our street');
    await onSandbox.communities!.link(street.communityId, [linked.group.groupId]);
    const channel = await onSandbox.newsletters!.create({ name: 'Our channel', description: 'News' });

    const pairs: [unknown, unknown][] = [
      [await onSandbox.groups!.info(group.group.groupId), await onWhatsApp.groups!.info(GROUP)],
      [await onSandbox.communities!.info(street.communityId), await onWhatsApp.communities!.info(community)],
      [
        await onSandbox.newsletters!.info({ newsletterId: channel.newsletterId }),
        await onWhatsApp.newsletters!.info({ newsletterId: NEWSLETTER }),
      ],
    ];
    for (const [expected, actual] of pairs) expect(shapeDifferences(expected, actual)).toEqual([]);
  });
});

/** Where two answers differ in shape: missing or extra fields, other types (null matches anything; arrays by their first items). */
function shapeDifferences(expected: unknown, actual: unknown, path = '$'): string[] {
  if (expected === null || actual === null) return [];
  if (Array.isArray(expected) || Array.isArray(actual)) {
    if (!Array.isArray(expected) || !Array.isArray(actual)) return [`${path}: array and ${typeof actual}`];
    return expected.length > 0 && actual.length > 0 ? shapeDifferences(expected[0], actual[0], `${path}[0]`) : [];
  }
  if (typeof expected !== typeof actual) return [`${path}: ${typeof expected} and ${typeof actual}`];
  if (typeof expected !== 'object') return [];
  const a = expected as Record<string, unknown>;
  const b = actual as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.flatMap((key) =>
    !(key in a) || !(key in b)
      ? [`${path}.${key}: only on ${key in a ? 'the sandbox' : 'whatsapp'}`]
      : shapeDifferences(a[key], b[key], `${path}.${key}`),
  );
}

/**
 * Cluster mode: a process that joins takes the instances that now prefer it, except those a phone
 * is being linked to. Such an instance stays with the process whose session shows the QR code (the
 * code the user scans stays valid, and scanning it through any process works) and moves once linked.
 * The ticks are driven by the test (`node.step()`), so what each one did is known.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preferredNode } from '../src/cluster/placement.js';
import {
  clusterEnv,
  connectedInstance,
  createInstance,
  startCluster,
  startGateway,
  uniqueNumber,
  waitFor,
  type TestCluster,
  type TestGateway,
  type TestInstance,
} from './support/gateway.js';

// QR codes that do not change by themselves while the test runs.
const env = clusterEnv({ SANDBOX_QR_INTERVAL_MS: '600000' });

describe('cluster mode: a pairing in progress is not moved', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster(1, env);
  }, 60_000);

  afterAll(async () => {
    await cluster.stop();
  }, 60_000);

  it('keeps an instance showing a QR code where it is when a process joins, and moves it once linked', async () => {
    const a = cluster.gateways[0]!;
    const qrOf = async (gw: TestGateway, instance: TestInstance) => {
      const res = await gw.api('GET', '/api/v1/instance/qr', { key: instance.token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.code as string;
    };
    // Sixteen instances showing a QR code, eight linked; all on the only process.
    const pairing: TestInstance[] = [];
    for (let i = 0; i < 16; i += 1) {
      const instance = await createInstance(a);
      const connect = await a.api('POST', '/api/v1/instance/connect', { key: instance.token });
      expect(connect.status, JSON.stringify(connect.body)).toBe(200);
      pairing.push(instance);
    }
    const linked: TestInstance[] = [];
    for (let i = 0; i < 8; i += 1) linked.push(await connectedInstance(a, uniqueNumber()));
    const codes = new Map<string, string>();
    for (const instance of pairing) codes.set(instance.id, await qrOf(a, instance));

    const b = await startGateway({ dialect: 'postgres', schema: cluster.schema, keepSchema: true, env });
    cluster.gateways.push(b);
    const nodeA = a.cluster!.node;
    const nodeB = b.cluster!.node;
    const prefersB = (instance: TestInstance) => preferredNode(instance.id, [nodeA.nodeId, nodeB.nodeId]) === nodeB.nodeId;
    const pairingForB = pairing.filter(prefersB);
    expect(pairingForB.length).toBeGreaterThan(0);

    // A sees B and gives back what B prefers, but not the instances showing a QR code; B takes them.
    await nodeB.step();
    await nodeA.step();
    await nodeB.step();
    for (const instance of linked.filter(prefersB)) expect(nodeB.owns(instance.id)).toBe(true);
    const owners = await cluster.owners();
    for (const instance of pairingForB) {
      expect(owners.get(instance.id)).toBe(nodeA.nodeId);
      // The same code, asked through either process.
      expect(await qrOf(b, instance)).toBe(codes.get(instance.id));
    }

    // The user scans one (through B: the request goes to A, where the code is): it moves once linked.
    const [scanned] = pairingForB as [TestInstance];
    const scan = await b.api('POST', '/api/v1/sandbox/scan', { key: b.adminKey, body: { instanceId: scanned.id, number: uniqueNumber() } });
    expect(scan.status, JSON.stringify(scan.body)).toBe(200);
    await nodeA.step();
    await nodeB.step();
    expect(nodeB.owns(scanned.id)).toBe(true);
    await waitFor(
      async () => ((await b.api('GET', '/api/v1/instance/status', { key: scanned.token })).body.status === 'CONNECTED' ? true : undefined),
      10_000,
      'the linked instance connected on the process it prefers',
    );
    // The others still show their codes where they were.
    for (const instance of pairingForB.slice(1)) expect(await qrOf(a, instance)).toBe(codes.get(instance.id));
  }, 120_000);
});

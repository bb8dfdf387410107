/**
 * Resuming sessions at start-up: a network without a pace reopens them all before resumeAll
 * resolves; a paced network (WhatsApp's resumePerSecond) opens them in the background, 1/rate
 * seconds apart, skips what was deleted meanwhile and stops with the registry.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { EventBus } from '../events/bus.js';
import type { Instance, InstanceService } from '../instance-registry/service.js';
import type { NetworkDriver, NetworkName, Session, SessionHost } from '../network/port.js';
import { SessionRegistry } from './registry.js';

function instance(id: string, network: NetworkName): Instance {
  return { id, name: id, network, status: 'CONNECTED', number: `55119${id.padStart(8, '0')}` } as Instance;
}

/** A driver whose sessions record when they connect (on the test's virtual clock). */
function driver(
  network: NetworkName,
  clock: { now: number },
  opened: { id: string; at: number }[],
  resumePerSecond?: number,
  connectMs = 0,
) {
  return {
    network,
    ...(resumePerSecond ? { resumePerSecond } : {}),
    open(host: SessionHost): Session {
      return {
        connect: async () => {
          opened.push({ id: host.instanceId, at: clock.now });
          // A login's own handshake time, on the test's clock.
          clock.now += connectMs;
        },
        close: async () => undefined,
      } as unknown as Session;
    },
    stop: async () => undefined,
  } satisfies NetworkDriver;
}

function rig(options: {
  paced?: number;
  whatsapp: Instance[];
  sandbox?: Instance[];
  sleep?: (ms: number) => Promise<void>;
  connectMs?: number;
}) {
  const clock = { now: 0 };
  const opened: { id: string; at: number }[] = [];
  const sleeps: number[] = [];
  const all = new Map([...options.whatsapp, ...(options.sandbox ?? [])].map((i) => [i.id, i]));
  const instances = {
    listByStatus: async (network: NetworkName) => [...all.values()].filter((i) => i.network === network),
    cached: () => undefined,
    find: async (id: string) => all.get(id),
    fresh: async (id: string) => all.get(id),
  } as unknown as InstanceService;
  const sleep =
    options.sleep ??
    (async (ms: number) => {
      sleeps.push(ms);
      clock.now += ms;
    });
  const registry = new SessionRegistry(
    [driver('sandbox', clock, opened), driver('whatsapp', clock, opened, options.paced, options.connectMs)],
    instances,
    {} as EventBus,
    pino({ level: 'silent' }),
    sleep,
    () => clock.now,
  );
  return { registry, opened, sleeps, all };
}

describe('instances arriving from another process (cluster mode)', () => {
  it('a paced network opens the sessions of instances taken over together at its pace; an unpaced one at once', async () => {
    const wa = ['1', '2', '3'].map((id) => instance(`wa${id}`, 'whatsapp'));
    const { registry, opened, sleeps } = rig({ paced: 20, whatsapp: wa, sandbox: [instance('sb1', 'sandbox')] });
    await Promise.all([...wa.map((i) => registry.adopt(i.id)), registry.adopt('sb1')]);
    expect(opened.filter((o) => o.id.startsWith('wa'))).toEqual([
      { id: 'wa1', at: 0 },
      { id: 'wa2', at: 50 },
      { id: 'wa3', at: 100 },
    ]);
    // The sandbox waits for no slot: the only gaps are WhatsApp's.
    expect(opened.map((o) => o.id)).toContain('sb1');
    expect(sleeps).toEqual([50, 50]);
    await registry.stop();
  });
});

describe('pairing', () => {
  it('is true while the session here shows a QR code, false once linked and for a session not open here', () => {
    const shown = new Map<string, boolean>();
    const linkable = {
      network: 'sandbox' as const,
      open: (host: SessionHost) =>
        ({ currentQr: () => (shown.get(host.instanceId) ? { code: 'qr', base64: '', attempt: 1 } : undefined) }) as unknown as Session,
      stop: async () => undefined,
    } satisfies NetworkDriver;
    const registry = new SessionRegistry([linkable], {} as InstanceService, {} as EventBus, pino({ level: 'silent' }));
    const pairingOne = { ...instance('p1', 'sandbox'), status: 'QRCODE', number: null } as Instance;
    expect(registry.pairing('p1')).toBe(false);
    registry.session(pairingOne);
    shown.set('p1', true);
    expect(registry.pairing('p1')).toBe(true);
    shown.set('p1', false);
    expect(registry.pairing('p1')).toBe(false);
  });
});

describe('resuming sessions at start-up', () => {
  it('a paced network opens one session every 1/rate seconds, in the background; an unpaced one opens all at once', async () => {
    const wa = ['1', '2', '3', '4'].map((id) => instance(`wa${id}`, 'whatsapp'));
    const { registry, opened, sleeps } = rig({
      paced: 20,
      whatsapp: wa,
      sandbox: [instance('sb1', 'sandbox'), instance('sb2', 'sandbox')],
    });
    expect(await registry.resumeAll()).toBe(6);
    // The sandbox sessions are open when resumeAll resolves.
    expect(opened.slice(0, 2).map((o) => o.id)).toEqual(['sb1', 'sb2']);
    expect(await registry.resumed()).toBe(4);
    expect(opened.slice(2)).toEqual([
      { id: 'wa1', at: 0 },
      { id: 'wa2', at: 50 },
      { id: 'wa3', at: 100 },
      { id: 'wa4', at: 150 },
    ]);
    expect(sleeps).toEqual([50, 50, 50]);
    await registry.stop();
  });

  it('counts the time a login took toward its gap: the pace is the rate, not the rate plus the handshakes', async () => {
    const wa = ['1', '2', '3', '4'].map((id) => instance(`wa${id}`, 'whatsapp'));
    // 20/s is a 50 ms gap; each login takes 30 ms of it.
    const { registry, opened, sleeps } = rig({ paced: 20, whatsapp: wa, connectMs: 30 });
    await registry.resumeAll();
    expect(await registry.resumed()).toBe(4);
    expect(opened.map((o) => o.id)).toEqual(['wa1', 'wa2', 'wa3', 'wa4']);
    // What is left of each gap: the logins start 50 ms apart, not 80.
    expect(sleeps).toEqual([20, 20, 20]);
    expect(opened.map((o) => o.at)).toEqual([0, 50, 100, 150]);
    await registry.stop();
  });

  it('skips an instance deleted before its turn and stops opening when the registry stops', async () => {
    let release: () => void = () => undefined;
    const gates: (() => void)[] = [];
    const wa = ['1', '2', '3', '4'].map((id) => instance(`wa${id}`, 'whatsapp'));
    const { registry, opened, all } = rig({
      paced: 10,
      whatsapp: wa,
      // Each gap waits for the test to let it pass.
      sleep: () =>
        new Promise<void>((resolve) => {
          gates.push(resolve);
          release();
        }),
    });
    const waitForGap = () => new Promise<void>((resolve) => (release = resolve));
    let gap = waitForGap();
    await registry.resumeAll();
    await gap;
    expect(opened.map((o) => o.id)).toEqual(['wa1']);
    all.delete('wa2');
    gap = waitForGap();
    gates.shift()!();
    await gap;
    // wa2 is gone: the next gap is before wa3.
    gap = waitForGap();
    gates.shift()!();
    await gap;
    expect(opened.map((o) => o.id)).toEqual(['wa1', 'wa3']);
    const stopping = registry.stop();
    gates.shift()!();
    await stopping;
    expect(await registry.resumed()).toBe(2);
    expect(opened.map((o) => o.id)).toEqual(['wa1', 'wa3']);
  });
});

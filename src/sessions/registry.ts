/**
 * One live Session per instance, opened on demand from the instance's network driver. The registry
 * is the SessionHost drivers talk back to: it keeps the stored status in step with CONNECTION events
 * and puts every event on the bus, in the order each instance emitted them.
 */
import type { FastifyBaseLogger } from 'fastify';
import { errors } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import type { Instance, InstanceService } from '../instance-registry/service.js';
import type { CanonicalEvent, NetworkDriver, NetworkName, Session, SessionHost } from '../network/port.js';

interface Entry {
  session: Session;
  /** Serialises this instance's events so they are stored in emission order. */
  tail: Promise<void>;
}

export class SessionRegistry {
  private readonly entries = new Map<string, Entry>();
  private readonly observers: ((instanceId: string, event: CanonicalEvent) => void)[] = [];
  private readonly recorders: ((instanceId: string, event: CanonicalEvent) => Promise<void> | void)[] = [];
  private readonly movers: { arrived(instanceId: string): Promise<void>; leaving(instanceId: string): Promise<void> }[] = [];
  private readonly drivers: Map<NetworkName, NetworkDriver>;
  /**
   * Whether this process may hold the instance's session: false on a standby (storage/active-lease.ts)
   * and, in cluster mode, for an instance another process leases (src/cluster/).
   */
  private active: (instanceId: string) => boolean = () => true;
  private refusal: (instanceId: string) => Error = () => errors.standby();
  private remoteReconnect: ((instanceId: string) => Promise<void>) | undefined;
  /** The last resume slot handed out per paced network (adopt). */
  private readonly turns = new Map<NetworkName, Promise<void>>();
  /** Paced resumes still opening sessions in the background (resumeAll). */
  private pacedResumes: Promise<number> = Promise.resolve(0);
  private stopping = false;

  constructor(
    drivers: NetworkDriver[],
    private readonly instances: InstanceService,
    private readonly bus: EventBus,
    private readonly log: FastifyBaseLogger,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    /** Milliseconds on the clock `sleep` waits by (the pace measures each login with it). */
    private readonly now: () => number = () => performance.now(),
  ) {
    this.drivers = new Map(drivers.map((driver) => [driver.network, driver]));
  }

  driver(network: NetworkName): NetworkDriver {
    const driver = this.drivers.get(network);
    if (!driver) {
      throw errors.driverUnavailable(network);
    }
    return driver;
  }

  /** Sessions open only where `active` says; elsewhere `refusal` is thrown (a standby's 503 by default). */
  activeWhen(active: (instanceId: string) => boolean, refusal?: (instanceId: string) => Error): void {
    this.active = active;
    if (refusal) this.refusal = refusal;
  }

  /** The instance's session, opened on first use. */
  session(instance: Instance): Session {
    if (!this.active(instance.id)) throw this.refusal(instance.id);
    const existing = this.entries.get(instance.id);
    if (existing) return existing.session;
    const driver = this.driver(instance.network);
    const entry: Entry = { session: undefined as unknown as Session, tail: Promise.resolve() };
    const host: SessionHost = {
      instanceId: instance.id,
      instanceName: instance.name,
      status: instance.status,
      number: instance.number,
      emit: (event) => this.record(instance.id, entry, event),
    };
    entry.session = driver.open(host);
    this.entries.set(instance.id, entry);
    return entry.session;
  }

  /**
   * In-process observers of every event a session emits, before any instance filter (per-instance
   * policies such as call auto-reject must act even when the event is not delivered).
   */
  observe(observer: (instanceId: string, event: CanonicalEvent) => void): void {
    this.observers.push(observer);
  }

  /**
   * Steps that run inside each instance's event order, before the event is queued: the message
   * store keeps media and messages here and adds `data.media` to the event. A step with nothing to
   * wait for returns nothing, not a promise (the event then waits no turn of the event loop for it).
   */
  beforeQueue(recorder: (instanceId: string, event: CanonicalEvent) => Promise<void> | void): void {
    this.recorders.push(recorder);
  }

  has(instanceId: string): boolean {
    return this.entries.has(instanceId);
  }

  /** A phone is being linked to the instance's session here: it shows a QR code (or a pairing code beside one). */
  pairing(instanceId: string): boolean {
    return this.entries.get(instanceId)?.session.currentQr() !== undefined;
  }

  /** A session that must be connected for the operation (sends and most others). */
  async connected(instance: Instance): Promise<Session> {
    return this.connectedNow(instance) ?? this.connectedSession(await this.instances.get(instance.id));
  }

  /**
   * `connected` without a promise when the instance's record is in the cache (the send road's hot
   * path); undefined when it must be read first.
   */
  connectedNow(instance: Instance): Session | undefined {
    if (!this.active(instance.id)) this.session(instance);
    const current = this.instances.cached(instance.id);
    return current && this.connectedSession(current);
  }

  private connectedSession(current: Instance): Session {
    if (current.status !== 'CONNECTED') throw errors.notConnected(current.status);
    return this.session(current);
  }

  /**
   * Reopens the sessions that were connected before the gateway stopped. Networks without a pace
   * (the sandbox) reopen them all before this resolves; a paced network (WhatsApp:
   * `resumePerSecond`) opens them in the background, one every 1/rate seconds, so a restart with
   * thousands of linked instances neither floods the network with logins nor this process with
   * handshakes (`resumed()` resolves when they are all opened). Resolves with the number of
   * sessions reopened now plus those scheduled.
   */
  async resumeAll(): Promise<number> {
    let resumed = 0;
    const paced: { list: Instance[]; perSecond: number }[] = [];
    for (const [network, driver] of this.drivers) {
      const list = (await this.instances.listByStatus(network, ['CONNECTED', 'CONNECTING', 'DISCONNECTED'])).filter(
        (instance) => instance.number !== null,
      );
      if (driver.resumePerSecond !== undefined) {
        paced.push({ list, perSecond: driver.resumePerSecond });
        resumed += list.length;
        continue;
      }
      for (const instance of list) if (await this.resumeOne(instance)) resumed += 1;
    }
    if (paced.length > 0) {
      const previous = this.pacedResumes;
      this.pacedResumes = previous.then(async (before) => {
        let opened = before;
        for (const { list, perSecond } of paced) opened += await this.resumePaced(list, perSecond);
        return opened;
      });
    }
    return resumed;
  }

  /** Resolves with the number of paced sessions opened once every paced resume has run. */
  resumed(): Promise<number> {
    return this.pacedResumes;
  }

  /** Opens `list` at `perSecond` sessions a second (the first at once); stops when the registry stops. */
  private async resumePaced(list: Instance[], perSecond: number): Promise<number> {
    const gapMs = 1000 / perSecond;
    let opened = 0;
    let slotStarted = 0;
    for (const [index, instance] of list.entries()) {
      // connect() of a linked session returns once its socket is opening (~25 ms of handshake for
      // WhatsApp): that time is part of the gap, else 25/s delivered ~15/s. A login slower than the
      // gap is followed at once by the next one, and never overlapped by it.
      if (index > 0) {
        const wait = Math.round(gapMs - (this.now() - slotStarted));
        if (wait > 0) await this.sleep(wait);
      }
      slotStarted = this.now();
      if (this.stopping) break;
      if (!this.active(instance.id)) continue;
      // Deleted or logged out meanwhile: nothing to resume.
      const current = this.instances.cached(instance.id) ?? (await this.instances.find(instance.id));
      if (!current || current.number === null || this.entries.has(instance.id)) continue;
      if (await this.resumeOne(current)) opened += 1;
    }
    return opened;
  }

  /**
   * Cluster mode: how an instance held by another process is reconnected there (its owner's admin
   * reconnect route).
   */
  reconnectElsewhereWith(remote: (instanceId: string) => Promise<void>): void {
    this.remoteReconnect = remote;
  }

  /**
   * Reconnects a linked instance where its session is: here (a connected one drops and connects
   * again, any other connects now), or on the process that holds it.
   */
  async reconnect(instance: Instance): Promise<void> {
    if (!this.active(instance.id) && this.remoteReconnect) return this.remoteReconnect(instance.id);
    const session = this.session(instance);
    if (instance.status === 'CONNECTED') await session.reconnect();
    else await session.connect();
  }

  /** Resolves at the network's next resume slot (1/resumePerSecond after the previous one), at once when unpaced. */
  private turn(network: NetworkName): Promise<void> {
    const rate = this.drivers.get(network)?.resumePerSecond;
    if (rate === undefined) return Promise.resolve();
    const previous = this.turns.get(network);
    const next = previous ? previous.then(() => this.sleep(1000 / rate)) : Promise.resolve();
    this.turns.set(network, next);
    return next;
  }

  /** Whether this process may hold the instance's session now. */
  mayHold(instanceId: string): boolean {
    return this.active(instanceId);
  }

  /**
   * Work that follows an instance between processes (cluster mode): `arrived` runs once this process
   * took the instance over and resumed its session, `leaving` before its session closes here.
   */
  onMove(listener: { arrived(instanceId: string): Promise<void>; leaving(instanceId: string): Promise<void> }): void {
    this.movers.push(listener);
  }

  /**
   * The instance arrived in this process (cluster mode): reopens its session when it is linked, then
   * tells the onMove listeners.
   */
  async adopt(instanceId: string): Promise<void> {
    if (this.stopping) return;
    const instance = await this.instances.fresh(instanceId);
    if (!instance) return;
    if (instance.number !== null && instance.status !== 'LOGGED_OUT' && !this.entries.has(instanceId)) {
      // A dead process's instances arrive together: a paced network still opens them at its pace.
      await this.turn(instance.network);
      if (!this.stopping && !this.entries.has(instanceId)) await this.resumeOne(instance);
    }
    for (const mover of this.movers) await mover.arrived(instanceId);
  }

  /**
   * Closes the instance's session here (it moves to another process): the onMove listeners stop
   * first, and this resolves once the session's last events are queued in order. Its stored state
   * stays for the next owner.
   */
  async release(instanceId: string): Promise<void> {
    for (const mover of this.movers) await mover.leaving(instanceId);
    const entry = this.entries.get(instanceId);
    this.entries.delete(instanceId);
    if (!entry) return;
    await entry.session.close().catch((error: unknown) => this.log.warn({ err: error, instanceId }, 'could not close a session'));
    await entry.tail;
  }

  private async resumeOne(instance: Instance): Promise<boolean> {
    try {
      await this.session(instance).connect();
      return true;
    } catch (error) {
      this.log.warn({ err: error, instanceId: instance.id }, 'could not resume session');
      return false;
    }
  }

  async instanceDeleted(id: string): Promise<void> {
    const entry = this.entries.get(id);
    this.entries.delete(id);
    if (entry) {
      await entry.session.close();
      await entry.tail;
    }
    const instance = await this.instances.find(id);
    if (instance) await this.drivers.get(instance.network)?.forget?.(id);
  }

  /**
   * Closes the instance's session and opens a fresh one that connects again (a heavier remedy than
   * `reconnect`: the driver's in-memory state for the instance is rebuilt).
   */
  async restart(instance: Instance): Promise<void> {
    // Held by another process (cluster mode): reconnected there, the remedy it offers remotely.
    if (!this.active(instance.id) && this.remoteReconnect) return this.remoteReconnect(instance.id);
    if (!this.active(instance.id)) throw this.refusal(instance.id);
    const entry = this.entries.get(instance.id);
    this.entries.delete(instance.id);
    if (entry) {
      await entry.session.close();
      await entry.tail;
    }
    await this.session(await this.instances.get(instance.id)).connect();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.pacedResumes.catch(() => undefined);
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((entry) => entry.session.close().catch(() => undefined)));
    await Promise.all(all.map((entry) => entry.tail));
    for (const driver of this.drivers.values()) await driver.stop();
  }

  /**
   * Keeps each instance's events in emission order: an event is queued on the bus only after the
   * previous one was queued (not stored), so the order holds while many events share a transaction.
   * The returned promise resolves when this event is stored.
   */
  private record(instanceId: string, entry: Entry, event: CanonicalEvent): Promise<void> {
    const run = async () => {
      if (event.type === 'CONNECTION') {
        const { status, number } = event.data;
        await this.instances.setConnectionState(instanceId, status, status === 'LOGGED_OUT' ? null : number);
      }
      for (const recorder of this.recorders) {
        try {
          const step = recorder(instanceId, event);
          if (step) await step;
        } catch (error) {
          this.log.error({ err: error, instanceId, event: event.type }, 'event recorder failed');
        }
      }
      return this.bus.enqueue(instanceId, event);
    };
    const queued = entry.tail.then(run, run);
    entry.tail = queued.then(
      () => undefined,
      (error: unknown) => this.log.error({ err: error, instanceId, event: event.type }, 'could not record event'),
    );
    // Observers run after the event took its place in the order, so what they emit comes after it.
    for (const observer of this.observers) {
      try {
        observer(instanceId, event);
      } catch (error) {
        this.log.warn({ err: error, instanceId, event: event.type }, 'event observer failed');
      }
    }
    return queued.then(async ({ stored }) => {
      await stored;
    });
  }
}

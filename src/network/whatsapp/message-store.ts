/**
 * The messages the driver must be able to find again by key: Baileys asks for them (`getMessage`) to
 * re-encrypt a message a recipient could not decrypt, poll votes are decrypted with the poll's stored
 * secret, and forwards need the original. Kept per instance, bounded, outside any socket so it
 * survives reconnects.
 *
 * Two levels: a bounded in-memory store of the exact protobufs (fast, what a retry right after a
 * send needs), and behind it the gateway's shared message store (migration 0003_messages, which
 * records every MESSAGE and SEND_MESSAGE event's JSON), so polls and forwards still work for older
 * messages and after a restart.
 */
import { proto, type WAMessage, type WAMessageKey } from 'baileys';
import type { MessageLookup } from '../port.js';
import { BoundedMap } from '../../bounded-maps.js';

export interface StoredMessage {
  key: WAMessageKey;
  message: proto.IMessage;
  messageTimestamp: number;
  pushName?: string | null;
}

export interface DriverMessageStore {
  put(instanceId: string, message: StoredMessage): Promise<void>;
  get(instanceId: string, key: Pick<WAMessageKey, 'remoteJid' | 'id' | 'fromMe'>): Promise<StoredMessage | undefined>;
  /** Finds a message by id alone (forwards name only the id). */
  findById(instanceId: string, id: string): Promise<StoredMessage | undefined>;
  forget(instanceId: string): Promise<void>;
}

export function toStored(message: WAMessage): StoredMessage | undefined {
  if (!message.message || !message.key.id) return undefined;
  const ts = message.messageTimestamp;
  return {
    key: message.key,
    message: message.message,
    messageTimestamp: typeof ts === 'number' ? ts : ts ? Number(ts.toString()) : 0,
    pushName: message.pushName ?? null,
  };
}

export class MemoryMessageStore implements DriverMessageStore {
  private readonly byInstance = new Map<string, BoundedMap<string, StoredMessage>>();

  constructor(private readonly perInstance = 1000) {}

  private of(instanceId: string): BoundedMap<string, StoredMessage> {
    let map = this.byInstance.get(instanceId);
    if (!map) {
      map = new BoundedMap(this.perInstance);
      this.byInstance.set(instanceId, map);
    }
    return map;
  }

  put(instanceId: string, message: StoredMessage): Promise<void> {
    if (message.key.id) this.of(instanceId).set(message.key.id, message);
    return Promise.resolve();
  }

  get(instanceId: string, key: Pick<WAMessageKey, 'remoteJid' | 'id' | 'fromMe'>): Promise<StoredMessage | undefined> {
    // Message ids are random and unique enough per account; the chat is not checked because the
    // same message may be addressed by phone JID on one side and by LID on the other.
    return Promise.resolve(key.id ? this.of(instanceId).get(key.id) : undefined);
  }

  findById(instanceId: string, id: string): Promise<StoredMessage | undefined> {
    return Promise.resolve(this.of(instanceId).get(id));
  }

  forget(instanceId: string): Promise<void> {
    this.byInstance.delete(instanceId);
    return Promise.resolve();
  }
}

/** Memory first, then the shared store (whose JSON is turned back into the protobuf). */
export class LayeredMessageStore implements DriverMessageStore {
  constructor(
    private readonly memory: DriverMessageStore,
    private readonly shared: MessageLookup | undefined,
  ) {}

  put(instanceId: string, message: StoredMessage): Promise<void> {
    return this.memory.put(instanceId, message);
  }

  async get(instanceId: string, key: Pick<WAMessageKey, 'remoteJid' | 'id' | 'fromMe'>): Promise<StoredMessage | undefined> {
    return (await this.memory.get(instanceId, key)) ?? (key.id ? this.fromShared(instanceId, key.id) : undefined);
  }

  async findById(instanceId: string, id: string): Promise<StoredMessage | undefined> {
    return (await this.memory.findById(instanceId, id)) ?? this.fromShared(instanceId, id);
  }

  forget(instanceId: string): Promise<void> {
    return this.memory.forget(instanceId);
  }

  private async fromShared(instanceId: string, id: string): Promise<StoredMessage | undefined> {
    const found = await this.shared?.find(instanceId, id);
    if (!found) return undefined;
    return {
      key: { ...found.key, ...(found.participant ? { participant: found.participant } : {}) },
      message: proto.Message.fromObject(found.message),
      messageTimestamp: found.messageTimestamp,
      pushName: found.pushName ?? null,
    };
  }
}

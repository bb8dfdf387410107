/** What the /sandbox control routes do: act as the phones and contacts of the simulated network. */
import { errors } from '../errors.js';
import type { InstanceService } from '../instance-registry/service.js';
import { toJid, type EventData } from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';
import type { MessageStore } from '../message-store/store.js';
import { newMessageId, type SandboxNetwork } from '../network/sandbox/network.js';
import type { SandboxSession } from '../network/sandbox/session.js';

export type ContactPresence = 'available' | 'unavailable' | 'composing' | 'recording' | 'paused';

export class SandboxService {
  constructor(
    private readonly world: SandboxNetwork,
    private readonly sessions: SessionRegistry,
    private readonly instances: InstanceService,
    /** The gateway's message store: the polls an instance sent. */
    private readonly messages: Pick<MessageStore, 'find'>,
  ) {}

  /** The contact `from` votes in the poll `pollMessageId` that the instance with number `to` sent it. */
  async contactVotes(from: string, to: string, pollMessageId: string, selectedOptions: string[]) {
    const session = this.world.connectedSession(to);
    const poll = await this.messages.find(session.instanceId, pollMessageId);
    const content = (poll?.message.pollCreationMessageV3 ?? poll?.message.pollCreationMessage) as
      { options?: { optionName?: string }[]; selectableOptionsCount?: number } | undefined;
    if (!poll || !poll.key.fromMe || !content) throw errors.pollNotFound(`poll ${pollMessageId} not found among the polls ${to} sent`);
    if (poll.key.remoteJid !== `${from}@s.whatsapp.net`)
      throw errors.notAPollRecipient(`poll ${pollMessageId} was sent to ${poll.key.remoteJid}, not to ${from}`);
    const names = new Set((content.options ?? []).map((o) => o.optionName));
    const unknown = selectedOptions.find((name) => !names.has(name));
    if (unknown !== undefined) throw errors.badRequest(`selectedOptions: "${unknown}" is not an option of poll ${pollMessageId}`);
    const allowed = content.selectableOptionsCount || names.size;
    if (selectedOptions.length > allowed)
      throw errors.badRequest(`selectedOptions: the poll allows ${allowed} choice(s), got ${selectedOptions.length}`);
    return this.world.deliverPollVote(from, to, pollMessageId, selectedOptions);
  }

  private async sessionOf(instanceId: string): Promise<SandboxSession> {
    const instance = await this.instances.get(instanceId);
    if (instance.network !== 'sandbox') {
      throw errors.notSandbox(instance.name, instance.network);
    }
    return this.sessions.session(instance) as SandboxSession;
  }

  async scan(instanceId: string, number: string) {
    const session = await this.sessionOf(instanceId);
    await session.scan(number);
    return { instanceId, status: 'CONNECTED' as const, number };
  }

  async confirmPairingCode(number: string, code: string) {
    const session = await this.world.confirmPairingCode(number, code);
    return { instanceId: session.instanceId, status: 'CONNECTED' as const, number };
  }

  async contactSendsText(from: string, to: string, text: string) {
    const delivered = await this.world.deliverText(from, to, text);
    if (!delivered) this.world.connectedSession(to); // throws the precise 404
    return delivered!;
  }

  async contactReads(from: string, to: string, messageIds: string[]) {
    const session = this.world.connectedSession(to);
    const readAt = Math.floor(this.world.clock.now() / 1000);
    for (const id of messageIds) {
      await session.notify({
        type: 'READ_RECEIPT',
        data: {
          key: { remoteJid: toJid(from), fromMe: true, id },
          receipt: 'read',
          readTimestamp: readAt,
        },
      });
    }
    return { receipts: messageIds.length };
  }

  async contactPresence(from: string, to: string, presence: ContactPresence) {
    const session = this.world.connectedSession(to);
    const jid = toJid(from);
    if (presence === 'available' || presence === 'unavailable') {
      const data: EventData<'PRESENCE'> = { id: jid, presence };
      if (presence === 'unavailable') data.lastSeen = Math.floor(this.world.clock.now() / 1000);
      await session.notify({ type: 'PRESENCE', data });
    } else {
      await session.notify({ type: 'CHAT_PRESENCE', data: { remoteJid: jid, participant: jid, presence } });
    }
    return { event: presence === 'available' || presence === 'unavailable' ? 'PRESENCE' : 'CHAT_PRESENCE' };
  }

  async contactCalls(from: string, to: string, isVideo: boolean) {
    const session = this.world.connectedSession(to);
    const id = newMessageId();
    await session.notify({
      type: 'CALL',
      data: {
        id,
        from: toJid(from),
        status: 'offer',
        isVideo,
        isGroup: false,
        timestamp: Math.floor(this.world.clock.now() / 1000),
        offline: false,
      },
    });
    return { callId: id };
  }

  async dropConnection(instanceId: string) {
    const session = await this.sessionOf(instanceId);
    await session.dropConnection('connection_lost');
    return { instanceId, status: 'DISCONNECTED' as const };
  }

  async logoutFromPhone(instanceId: string) {
    const session = await this.sessionOf(instanceId);
    await session.logout('logged_out_from_phone');
    return { instanceId, status: 'LOGGED_OUT' as const };
  }

  setContactName(number: string, name: string) {
    this.world.setName(number, name);
    return { number, pushName: name };
  }
}

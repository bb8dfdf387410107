/** What the /sandbox control routes do: act as the phones and contacts of the simulated network. */
import { AppError } from '../../errors.js';
import type { InstanceService } from '../../instances/service.js';
import { toJid } from '../port.js';
import type { SessionRegistry } from '../../sessions/registry.js';
import { newMessageId, type SandboxNetwork } from './network.js';
import type { SandboxSession } from './session.js';

export type ContactPresence = 'available' | 'unavailable' | 'composing' | 'recording' | 'paused';

export class SandboxService {
  constructor(
    private readonly world: SandboxNetwork,
    private readonly sessions: SessionRegistry,
    private readonly instances: InstanceService,
  ) {}

  private async sessionOf(instanceId: string): Promise<SandboxSession> {
    const instance = await this.instances.get(instanceId);
    if (instance.network !== 'sandbox') {
      throw new AppError('not_sandbox', 409, `instance ${instance.name} is on the ${instance.network} network, not the sandbox`);
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
      await session.notify('READ_RECEIPT', {
        key: { remoteJid: toJid(from), fromMe: true, id },
        receipt: 'read',
        readTimestamp: readAt,
      });
    }
    return { receipts: messageIds.length };
  }

  async contactPresence(from: string, to: string, presence: ContactPresence) {
    const session = this.world.connectedSession(to);
    const jid = toJid(from);
    if (presence === 'available' || presence === 'unavailable') {
      const data: Record<string, unknown> = { id: jid, presence };
      if (presence === 'unavailable') data.lastSeen = Math.floor(this.world.clock.now() / 1000);
      await session.notify('PRESENCE', data);
    } else {
      await session.notify('CHAT_PRESENCE', { remoteJid: jid, participant: jid, presence });
    }
    return { event: presence === 'available' || presence === 'unavailable' ? 'PRESENCE' : 'CHAT_PRESENCE' };
  }

  async contactCalls(from: string, to: string, isVideo: boolean) {
    const session = this.world.connectedSession(to);
    const id = newMessageId();
    await session.notify('CALL', {
      id,
      from: toJid(from),
      status: 'offer',
      isVideo,
      isGroup: false,
      timestamp: Math.floor(this.world.clock.now() / 1000),
      offline: false,
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

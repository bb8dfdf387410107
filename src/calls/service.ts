/**
 * Calls: rejecting, the call history, and the per-instance auto-reject policy. The policy acts on
 * every CALL offer a session emits (observed before any event filter), so it works whatever the
 * instance's webhook events are, on every network driver that can reject calls.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Instance, InstanceService } from '../instance-registry/service.js';
import { capabilityOf } from '../sessions/capability.js';
import { jidToNumber, type CallOperations, type EventOf, type PageRequest } from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';

export interface CallSettings {
  autoReject: boolean;
  /** Sent to the caller after an automatic rejection. */
  message: string | null;
}

const DEFAULT_SETTINGS: CallSettings = { autoReject: false, message: null };

/** The call settings kept in the instance's settings under `calls`. */
export function callSettingsOf(instance: Instance): CallSettings {
  const stored = instance.settings.calls as Partial<CallSettings> | undefined;
  return {
    autoReject: stored?.autoReject === true,
    message: typeof stored?.message === 'string' ? stored.message : null,
  };
}

export class CallService {
  constructor(
    private readonly sessions: SessionRegistry,
    private readonly instances: InstanceService,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Starts applying each instance's auto-reject policy to incoming calls. */
  watchIncomingCalls(): void {
    this.sessions.observe((instanceId, event) => {
      if (event.type !== 'CALL' || event.data.status !== 'offer') return;
      this.autoReject(instanceId, event).catch((error: unknown) => this.log.warn({ err: error, instanceId }, 'auto-reject failed'));
    });
  }

  private calls(instance: Instance): Promise<CallOperations> {
    return capabilityOf(this.sessions, instance, 'calls');
  }

  async reject(instance: Instance, callId: string, from: string | undefined) {
    return (await this.calls(instance)).reject(callId, from !== undefined ? { from } : {});
  }

  async history(instance: Instance, page: PageRequest) {
    const { items, total } = await (await this.calls(instance)).history(page);
    return { items, total, ...page };
  }

  async settings(instance: Instance): Promise<CallSettings> {
    return callSettingsOf(await this.instances.get(instance.id));
  }

  async updateSettings(instance: Instance, input: { autoReject: boolean; message?: string | null | undefined }): Promise<CallSettings> {
    const current = callSettingsOf(await this.instances.get(instance.id));
    const next: CallSettings = { autoReject: input.autoReject, message: input.message === undefined ? current.message : input.message };
    const updated = await this.instances.updateSettings(instance.id, { settings: { calls: { ...DEFAULT_SETTINGS, ...next } } });
    return callSettingsOf(updated);
  }

  private async autoReject(instanceId: string, event: EventOf<'CALL'>): Promise<void> {
    const instance = await this.instances.find(instanceId);
    if (!instance || instance.status !== 'CONNECTED') return;
    const settings = callSettingsOf(instance);
    if (!settings.autoReject) return;
    const session = this.sessions.session(instance);
    const { id: callId, from } = event.data;
    if (!session.calls) return;
    await session.calls.reject(callId, { ...(from ? { from } : {}), automatic: true });
    const caller = from ? jidToNumber(from) : undefined;
    if (settings.message !== null && caller) {
      await session.send({ kind: 'text', to: caller, text: settings.message, linkPreview: false });
    }
  }
}

/**
 * A failover group's webhook: one durable sink per group (`group:<groupId>`), so each group has its
 * own lanes, retries and dead letters on the same outbox road as instance webhooks. It takes the
 * events of the group's members and POSTs them signed with the group's webhook secret.
 */
import type { OutboxEntry } from '../../events/envelope.js';
import { DeliveryError, type DurableSink, type RetryPolicy } from '../../events/sink.js';
import type { WebhookResult, WebhookSink } from '../../events/sinks/webhook.js';
import type { Instance } from '../../instance-registry/service.js';
import { sinkNameOf, type FailoverService } from './service.js';

export class GroupWebhookSink implements DurableSink {
  readonly name: string;
  readonly retry: RetryPolicy;

  constructor(
    private readonly groupId: string,
    private readonly groups: FailoverService,
    private readonly webhook: WebhookSink,
  ) {
    this.name = sinkNameOf(groupId);
    this.retry = webhook.retry;
  }

  wants(instance: Instance): boolean {
    const group = this.groups.group(this.groupId);
    return group !== undefined && group.webhookUrl !== null && group.members.includes(instance.id);
  }

  async deliver(entry: OutboxEntry, instance: Instance): Promise<void> {
    const result = await this.redeliver(entry, instance);
    if (!result.ok) throw new DeliveryError(result.error ?? 'delivery failed', result.status);
  }

  /** One POST (the dead-letter retry route uses it too, so a group's dead letter goes back to the group). */
  async redeliver(entry: Pick<OutboxEntry, 'body' | 'eventId' | 'type'>, instance: Instance): Promise<WebhookResult> {
    const group = this.groups.group(this.groupId);
    if (!group?.webhookUrl) return { ok: false, status: null, error: 'the failover group has no webhookUrl (or is deleted)' };
    // The instance webhook's POST and signature, aimed at the group's URL with the group's secret.
    // Only the admin key sets a group's URL, so it may reach a private receiver (docs/channels.md).
    return this.webhook.post(entry, {
      ...instance,
      webhookUrl: group.webhookUrl,
      webhookAdminSet: true,
      webhookSecret: group.webhookSecret,
    });
  }
}

/**
 * A failover group's webhook: one durable sink per group (`group:<groupId>`), so each group has its
 * own lanes, retries and dead letters on the same outbox road as instance webhooks. It takes the
 * events of the group's members and POSTs them signed with the group's webhook secret.
 */
import type { OutboxEntry } from '../../events/envelope.js';
import { DeliveryError, type DurableSink, type RetryPolicy } from '../../events/sink.js';
import type { WebhookSink } from '../../events/sinks/webhook.js';
import type { Instance } from '../../instances/service.js';
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
    const group = this.groups.group(this.groupId);
    if (!group?.webhookUrl) return;
    // The instance webhook's POST and signature, aimed at the group's URL with the group's secret.
    const result = await this.webhook.post(entry, { ...instance, webhookUrl: group.webhookUrl, webhookSecret: group.webhookSecret });
    if (!result.ok) throw new DeliveryError(result.error ?? 'delivery failed', result.status);
  }
}

/**
 * Calls on WhatsApp: rejecting a ringing call (Baileys' rejectCall: a `<call><reject/></call>`
 * stanza to the caller) and the call log kept from `call` events (state-store.ts). WhatsApp tells
 * linked devices about incoming calls only; calls this account places from the phone are not in it.
 * The per-instance auto-reject policy lives in src/calls (it calls `reject` with `automatic`).
 */
import { errors } from '../../errors.js';
import type { CallOperations, CallRecord, PageOf, PageRequest } from '../port.js';
import { wa, type WhatsAppLink } from './capabilities.js';
import type { CallRow } from './state-store.js';

export class WhatsAppCalls implements CallOperations {
  constructor(private readonly link: WhatsAppLink) {}

  async reject(callId: string, options: { from?: string; automatic?: boolean } = {}): Promise<CallRecord> {
    const { instanceId, state } = this.link;
    const call = await state.call(instanceId, callId);
    if (!call) throw errors.notFound(`call ${callId}`);
    if (call.status !== 'ringing') throw errors.conflict(`call ${callId} is not ringing (it is ${call.status})`);
    // The stanza goes to the caller as WhatsApp named it (often a LID), as kept in the log.
    await wa(() => this.link.socket().rejectCall(callId, call.from_jid));
    const timestamp = this.link.now();
    const rejected: CallRow = { ...call, status: 'rejected', rejected_by: options.automatic ? 'auto' : 'user', ended_at: timestamp };
    await state.saveCall(rejected);
    const view = this.view(rejected);
    await this.link.emit({
      type: 'CALL',
      data: {
        id: callId,
        from: view.from,
        status: 'reject',
        isVideo: view.isVideo,
        isGroup: view.isGroup,
        timestamp,
        ...(options.automatic ? { reason: 'auto_reject' } : {}),
      },
    });
    return view;
  }

  async history(page: PageRequest): Promise<PageOf<CallRecord>> {
    const { rows, total } = await this.link.state.listCalls(this.link.instanceId, page);
    await this.link.addresses.prefetch(rows.map((r) => r.from_jid));
    return { items: rows.map((row) => this.view(row)), total };
  }

  private view(row: CallRow): CallRecord {
    return {
      callId: row.call_id,
      from: this.link.addresses.resolve(row.from_jid).jid,
      direction: 'incoming',
      isVideo: Boolean(row.is_video),
      isGroup: Boolean(row.is_group),
      status: row.status as CallRecord['status'],
      rejectedBy: (row.rejected_by as CallRecord['rejectedBy']) ?? null,
      offeredAt: Number(row.offered_at),
      endedAt: row.ended_at === null ? null : Number(row.ended_at),
    };
  }
}

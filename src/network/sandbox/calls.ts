/** The call log of a sandbox account and rejecting calls that ring. */
import { errors } from '../../errors.js';
import type { CallOperations, CallRecord, PageOf, PageRequest } from '../port.js';
import { type SandboxWorld } from './world.js';
import { pageOf } from '../paging.js';

export class SandboxCalls implements CallOperations {
  constructor(
    private readonly world: SandboxWorld,
    private readonly me: () => string,
  ) {}

  async reject(callId: string, options: { from?: string; automatic?: boolean } = {}): Promise<CallRecord> {
    const owner = this.me();
    const call = this.world.callsOf(owner).find((c) => c.callId === callId);
    if (!call) throw errors.notFound(`call ${callId}`);
    if (call.status !== 'ringing') throw errors.conflict(`call ${callId} is not ringing (it is ${call.status})`);
    // The CALL event goes through the observed host, which records the rejection in the call log.
    await this.world.emitTo(owner, {
      type: 'CALL',
      data: {
        id: call.callId,
        from: call.from,
        status: 'reject',
        isVideo: call.isVideo,
        isGroup: call.isGroup,
        timestamp: this.world.now(),
        offline: false,
        ...(options.automatic ? { reason: 'auto_reject' } : {}),
      },
    });
    // The log was saved when the event went by; this write lands after it, so the reply waits for both.
    await this.world.saveCalls(owner);
    return { ...call };
  }

  async history(page: PageRequest): Promise<PageOf<CallRecord>> {
    const newestFirst = [...this.world.callsOf(this.me())].reverse();
    const { items, total } = pageOf(newestFirst, page);
    return { items: items.map((c) => ({ ...c })), total };
  }
}

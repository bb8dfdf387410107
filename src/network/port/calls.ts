/** Port capability: Calls: reject, call links and the record of calls. */
import type { PageOf, PageRequest } from '../port.js';

export interface CallRecord {
  callId: string;
  /** The caller. */
  from: string;
  direction: 'incoming' | 'outgoing';
  isVideo: boolean;
  isGroup: boolean;
  status: 'ringing' | 'rejected' | 'missed' | 'ended';
  /** Who rejected: this account on request, or the per-instance auto-reject policy. */
  rejectedBy: 'user' | 'auto' | null;
  offeredAt: number;
  endedAt: number | null;
}

export interface CallOperations {
  /** Rejects a ringing call; `from` helps drivers that do not keep a call log. */
  reject(callId: string, options?: { from?: string; automatic?: boolean }): Promise<CallRecord>;
  /** Newest first. */
  history(page: PageRequest): Promise<PageOf<CallRecord>>;
}

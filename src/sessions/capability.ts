/** Reaching an optional capability of an instance's session, or a clear 501 when its driver lacks it. */
import { errors } from '../errors.js';
import type { Instance } from '../instance-registry/service.js';
import type { Session } from '../network/port.js';
import type { SessionRegistry } from './registry.js';

export type CapabilityName = 'chats' | 'groups' | 'users' | 'labels' | 'newsletters' | 'communities' | 'calls' | 'messages';

const OPERATIONS: Record<CapabilityName, string> = {
  chats: 'chat management',
  groups: 'group management',
  users: 'user and profile management',
  labels: 'labels',
  newsletters: 'newsletters',
  communities: 'communities',
  calls: 'call handling',
  messages: 'reactions, deletions, edits, read receipts and chat presence',
};

/** 409 when the instance is not connected, 501 when its driver has no such capability. */
export async function capabilityOf<K extends CapabilityName>(
  sessions: SessionRegistry,
  instance: Instance,
  name: K,
): Promise<NonNullable<Session[K]>> {
  const session = await sessions.connected(instance);
  const capability = session[name];
  if (!capability) throw errors.notSupported(OPERATIONS[name], instance.network);
  return capability;
}

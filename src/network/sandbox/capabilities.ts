/** Gives a sandbox session its chats, groups, users, labels, newsletters, communities, calls and message operations. */
import { errors } from '../../errors.js';
import { SandboxCalls } from './calls.js';
import { SandboxChats } from './chats.js';
import { SandboxCommunities } from './communities.js';
import { SandboxGroups } from './groups.js';
import { SandboxLabels } from './labels.js';
import { SandboxMessages } from './messages.js';
import { SandboxNewsletters } from './newsletters.js';
import type { SandboxSession } from './session.js';
import { SandboxUsers } from './users.js';
import type { SandboxWorld } from './world.js';

export function equipSession(session: SandboxSession, world: SandboxWorld): SandboxSession {
  // Every operation acts as the number the session is linked to at the time of the call.
  const me = (): string => {
    const number = session.currentNumber();
    if (number === null || !session.isConnected()) throw errors.notConnected(number === null ? 'not linked' : 'not connected');
    return number;
  };
  const chats = new SandboxChats(world, me);
  session.chats = chats;
  session.initialHistory = () => chats.initialHistory();
  const groups = new SandboxGroups(world, me);
  session.groups = groups;
  session.groupRecipients = (groupId) => groups.messageRecipients(groupId);
  session.users = new SandboxUsers(world, me);
  session.labels = new SandboxLabels(world, me);
  session.newsletters = new SandboxNewsletters(world, me);
  session.communities = new SandboxCommunities(world, me);
  session.calls = new SandboxCalls(world, me);
  session.messages = new SandboxMessages(world, me);
  return session;
}

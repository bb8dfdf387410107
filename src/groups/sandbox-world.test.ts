/** The sandbox world's rules without HTTP: what it saves is what it loads, and its limits hold. */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { SandboxChats } from '../network/sandbox/chats.js';
import { SandboxGroups } from '../network/sandbox/groups.js';
import { SandboxNetwork } from '../network/sandbox/network.js';
import { SandboxUsers } from '../network/sandbox/users.js';
import { LIMITS, SandboxWorld } from '../network/sandbox/world.js';
import { MemoryWorldStore } from '../network/sandbox/world-store.js';
import type { SessionHost } from '../network/port.js';

function world(store = new MemoryWorldStore()) {
  return { store, world: new SandboxWorld(new SandboxNetwork(new ManualClock()), store) };
}

/** A host whose session is linked to `number`, recording what it is told. */
function host(number: string): SessionHost & { emitted: unknown[] } {
  const emitted: unknown[] = [];
  return {
    instanceId: `i-${number}`,
    instanceName: number,
    status: 'CONNECTED',
    number,
    emitted,
    emit: (event) => Promise.resolve(void emitted.push(event)),
  };
}

describe('sandbox world documents', () => {
  it('loads back groups, accounts and chat settings it saved', async () => {
    const first = world();
    const owner = '5511900000001';
    const member = '5511900000002';
    await new SandboxUsers(first.world, () => member).setPrivacy({ groupAdd: 'contacts' });
    const { group, results } = await new SandboxGroups(first.world, () => owner).create('Saved', [member]);
    expect(results[0]?.status).toBe('privacy_restricted');
    const observed = first.world.observe(host(owner));
    await observed.emit({
      type: 'MESSAGE',
      data: {
        key: { remoteJid: `${member}@s.whatsapp.net`, fromMe: false, id: 'M1' },
        message: { conversation: 'hi' },
        messageTimestamp: 1,
      },
    });
    await new SandboxChats(first.world, () => owner).setPinned(member, true);

    const second = world(first.store);
    await second.world.load();
    expect(second.world.groups.get(group.groupId)).toMatchObject({
      subject: 'Saved',
      participants: [{ number: owner, role: 'superadmin' }],
    });
    expect(second.world.findAccount(member)?.privacy.groupAdd).toBe('contacts');
    const chat = await new SandboxChats(second.world, () => owner).get(member);
    // Settings come back; messages and unread counts were kept in memory only.
    expect(chat).toMatchObject({ pinned: true, unreadCount: 0, lastMessage: null });
  });

  it('keeps a bounded number of messages per chat', async () => {
    const { world: w } = world();
    const owner = '5511900000003';
    const observed = w.observe(host(owner));
    for (let i = 0; i < LIMITS.messagesPerChat + 5; i += 1) {
      await observed.emit({
        type: 'MESSAGE',
        data: {
          key: { remoteJid: '5511900000004@s.whatsapp.net', fromMe: false, id: `M${i}` },
          message: { conversation: String(i) },
          messageTimestamp: i,
        },
      });
    }
    const history = await new SandboxChats(w, () => owner).history('5511900000004', { offset: 0, limit: 500 });
    expect(history.total).toBe(LIMITS.messagesPerChat);
    expect(history.items[0]?.key.id).toBe(`M${LIMITS.messagesPerChat + 4}`);
    // Reactions and edits change messages; they are not messages of the chat.
    await observed.emit({
      type: 'MESSAGE',
      data: {
        key: { remoteJid: '5511900000004@s.whatsapp.net', fromMe: false, id: 'R1' },
        message: { reactionMessage: { text: '👍' } },
        messageTimestamp: 9999,
      },
    });
    expect((await new SandboxChats(w, () => owner).history('5511900000004', { offset: 0, limit: 1 })).items[0]?.key.id).not.toBe('R1');
  });
});

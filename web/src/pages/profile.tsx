/** The signed-in user's profile and password; for owners, users and invitations. */
import { useEffect, useState } from 'preact/hooks';
import { api, changePassword, currentUser, setUser, type User } from '../api';
import { useSignal } from '../store';
import { ActionForm, Done, Empty, ErrorBox, Field, SecretBox, time, useAction } from '../ui';

export function ProfilePage() {
  const user = useSignal(currentUser);
  if (!user) return null;
  return (
    <section>
      <h1>Profile</h1>
      <div class="grid">
        <ProfileForm user={user} />
        <PasswordForm />
      </div>
      {user.role === 'owner' ? <Users self={user} /> : null}
    </section>
  );
}

function ProfileForm({ user }: { user: User }) {
  const [name, setName] = useState(user.name);
  const [email, setEmail] = useState(user.email);
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    setSaved(false);
    setUser(await api<User>('PATCH', '/auth/me', { name, email }));
    setSaved(true);
  });
  return (
    <ActionForm label="Profile" onSubmit={() => save.run()}>
      <h2>You</h2>
      <p class="muted">Role: {user.role}</p>
      <Field label="Name">
        <input name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label="Email">
        <input name="email" type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      </Field>
      <button type="submit" class="primary" disabled={save.busy}>
        Save profile
      </button>
      <Done>{saved ? 'Saved.' : null}</Done>
      <ErrorBox error={save.error} />
    </ActionForm>
  );
}

function PasswordForm() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [done, setDone] = useState(false);
  const change = useAction(async () => {
    setDone(false);
    await changePassword(current, next);
    setCurrent('');
    setNext('');
    setDone(true);
  });
  return (
    <ActionForm label="Change password" onSubmit={() => change.run()}>
      <h2>Password</h2>
      <p class="muted">Changing it signs you out everywhere else.</p>
      <Field label="Current password">
        <input
          name="currentPassword"
          type="password"
          autocomplete="current-password"
          required
          value={current}
          onInput={(e) => setCurrent(e.currentTarget.value)}
        />
      </Field>
      <Field label="New password" hint="At least 8 characters.">
        <input
          name="newPassword"
          type="password"
          autocomplete="new-password"
          minLength={8}
          required
          value={next}
          onInput={(e) => setNext(e.currentTarget.value)}
        />
      </Field>
      <button type="submit" disabled={change.busy}>
        Change password
      </button>
      <Done>{done ? 'Password changed.' : null}</Done>
      <ErrorBox error={change.error} />
    </ActionForm>
  );
}

interface Invitation {
  id: string;
  role: string;
  expiresAt: string;
  usedAt: string | null;
}

function Users({ self }: { self: User }) {
  const [users, setUsers] = useState<User[] | undefined>();
  const [invitations, setInvitations] = useState<Invitation[]>([]);
  const [role, setRole] = useState('operator');
  const [link, setLink] = useState<string | undefined>();
  const load = useAction(async () => {
    setUsers((await api<{ items: User[] }>('GET', '/auth/users')).items);
    setInvitations((await api<{ items: Invitation[] }>('GET', '/auth/invitations')).items);
  });
  const changeRole = useAction(async (user: User, next: string) => {
    await api('PATCH', `/auth/users/${encodeURIComponent(user.id)}`, { role: next });
    await load.run();
  });
  const remove = useAction(async (user: User) => {
    if (!window.confirm(`Delete ${user.email}?`)) return;
    await api('DELETE', `/auth/users/${encodeURIComponent(user.id)}`);
    await load.run();
  });
  const invite = useAction(async () => {
    const created = await api<{ registerPath: string }>('POST', '/auth/invitations', { role });
    setLink(`${window.location.origin}${created.registerPath}`);
    await load.run();
  });
  const withdraw = useAction(async (invitation: Invitation) => {
    await api('DELETE', `/auth/invitations/${encodeURIComponent(invitation.id)}`);
    await load.run();
  });
  useEffect(() => {
    void load.run();
  }, []);
  const error = load.error ?? changeRole.error ?? remove.error ?? invite.error ?? withdraw.error;
  return (
    <div class="card">
      <h2>Users</h2>
      <ErrorBox error={error} />
      <ul class="list" aria-label="Users">
        {users?.map((user) => (
          <li key={user.id} class="row">
            <span>
              <strong>{user.name}</strong> <span class="muted">{user.email}</span>
            </span>
            <select
              aria-label={`Role of ${user.email}`}
              value={user.role}
              onChange={(e) => void changeRole.run(user, e.currentTarget.value)}
            >
              <option value="owner">owner</option>
              <option value="operator">operator</option>
              <option value="viewer">viewer (read-only)</option>
            </select>
            {user.id !== self.id ? (
              <button type="button" class="danger" onClick={() => void remove.run(user)}>
                Delete
              </button>
            ) : null}
          </li>
        ))}
      </ul>
      <h3>Invite someone</h3>
      <ActionForm label="Invite someone" class="inline-form" onSubmit={() => invite.run()}>
        <Field label="Role">
          <select name="role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
            <option value="operator">operator</option>
            <option value="viewer">viewer (read-only)</option>
            <option value="owner">owner</option>
          </select>
        </Field>
        <button type="submit">Create invitation link</button>
      </ActionForm>
      {link ? <SecretBox label="Invitation link (one use, 72 hours)" value={link} note="Shown only now. Send it to the person." /> : null}
      {invitations.length === 0 ? <Empty>No invitation yet.</Empty> : null}
      <ul class="list" aria-label="Invitations">
        {invitations.map((invitation) => (
          <li key={invitation.id} class="row">
            <span>
              {invitation.role} · {invitation.usedAt ? `used ${time(invitation.usedAt)}` : `valid until ${time(invitation.expiresAt)}`}
            </span>
            {!invitation.usedAt ? (
              <button type="button" onClick={() => void withdraw.run(invitation)}>
                Withdraw
              </button>
            ) : null}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** Sign in, first-run registration (the owner) and registration with an invitation code. */
import { useEffect, useState } from 'preact/hooks';
import { api, login, register } from '../api';
import { ActionForm, ErrorBox, Field, useAction } from '../ui';

interface Registration {
  firstUser: boolean;
  open: boolean;
}

export function LoginPage({ invitation }: { invitation: string | undefined }) {
  const [registration, setRegistration] = useState<Registration | undefined>();
  const [loadError, setLoadError] = useState<unknown>(null);
  const [mode, setMode] = useState<'login' | 'register'>(invitation ? 'register' : 'login');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [name, setName] = useState('');
  const [code, setCode] = useState(invitation ?? '');

  useEffect(() => {
    api<Registration>('GET', '/auth/registration')
      .then((r) => {
        setRegistration(r);
        if (r.firstUser) setMode('register');
      })
      .catch(setLoadError);
  }, []);

  const submit = useAction(async () => {
    if (mode === 'login') await login(email, password);
    else await register({ email, password, ...(name ? { name } : {}), ...(code && !registration?.firstUser ? { invitation: code } : {}) });
  });

  const first = registration?.firstUser === true;
  const title = first ? 'Create the owner account' : mode === 'login' ? 'Sign in' : 'Register';
  return (
    <main class="auth-page">
      <h1 class="brand">Waygate</h1>
      <ActionForm label={title} onSubmit={() => submit.run()}>
        <h2>{title}</h2>
        {first ? <p>No user exists yet. The first account owns this gateway: it can invite others and change their roles.</p> : null}
        <ErrorBox error={loadError} />
        <Field label="Email">
          <input
            name="email"
            type="email"
            autocomplete="username"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </Field>
        {mode === 'register' ? (
          <Field label="Name">
            <input name="name" autocomplete="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
        ) : null}
        <Field label="Password" hint={mode === 'register' ? 'At least 8 characters.' : undefined}>
          <input
            name="password"
            type="password"
            autocomplete={mode === 'login' ? 'current-password' : 'new-password'}
            minLength={mode === 'register' ? 8 : 1}
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
        {mode === 'register' && !first ? (
          <Field
            label="Invitation code"
            hint={registration?.open ? 'Optional: registration is open.' : 'Ask an owner of this gateway for one.'}
          >
            <input name="invitation" value={code} required={!registration?.open} onInput={(e) => setCode(e.currentTarget.value)} />
          </Field>
        ) : null}
        <ErrorBox error={submit.error} />
        <button type="submit" class="primary" disabled={submit.busy}>
          {submit.busy ? 'Please wait…' : first ? 'Create owner account' : mode === 'login' ? 'Sign in' : 'Register'}
        </button>
        {!first ? (
          <p class="switch">
            {mode === 'login' ? (
              <button type="button" class="link" onClick={() => setMode('register')}>
                I have an invitation code
              </button>
            ) : (
              <button type="button" class="link" onClick={() => setMode('login')}>
                I already have an account
              </button>
            )}
          </p>
        ) : null}
      </ActionForm>
    </main>
  );
}

/** The Waygate management interface: session bootstrap, layout and the browser-side routes. */
import { render, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { currentUser, logout, refreshSession } from './api';
import { socketState, startEvents, stopEvents } from './events';
import { BackfillPage } from './pages/backfill';
import { InstancePage } from './pages/instance';
import { InstancesPage } from './pages/instances';
import { LoginPage } from './pages/login';
import { OperationsPage } from './pages/operations';
import { ProfilePage } from './pages/profile';
import { location$, navigate, onLinkClick } from './router';
import { useSignal } from './store';
import './styles.css';

const LIVE_LABELS = { open: 'live', connecting: 'connecting…', closed: 'offline', refused: 'no live events for viewers' } as const;

function Layout({ children }: { children: ComponentChildren }) {
  const user = useSignal(currentUser);
  const live = useSignal(socketState);
  const [menuOpen, setMenuOpen] = useState(false);
  return (
    <div class="layout">
      <header class="topbar">
        <a href="/" class="brand">
          Waygate
        </a>
        <button type="button" class="menu-toggle" aria-expanded={menuOpen} aria-controls="main-nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <nav id="main-nav" class={menuOpen ? 'open' : ''} aria-label="Main" onClick={() => setMenuOpen(false)}>
          <a href="/">Instances</a>
          <a href="/operations">Operations</a>
          <a href="/backfill">Backfill</a>
          <a href="/profile">Profile{user?.role === 'owner' ? ' & users' : ''}</a>
          <a href="/docs" target="_blank" rel="noreferrer">
            API docs
          </a>
          <span class={`live live-${live}`} title="Live events connection">
            {LIVE_LABELS[live]}
          </span>
          <button
            type="button"
            onClick={() => {
              stopEvents();
              void logout().then(() => navigate('/', true));
            }}
          >
            Sign out
          </button>
        </nav>
      </header>
      <main class="content">{children}</main>
    </div>
  );
}

function App() {
  const user = useSignal(currentUser);
  const path = useSignal(location$);
  const [booted, setBooted] = useState(false);

  useEffect(() => {
    void refreshSession().finally(() => setBooted(true));
  }, []);
  useEffect(() => {
    if (user) startEvents();
    else stopEvents();
  }, [user?.id]);

  if (!booted) return <p class="loading">Loading…</p>;
  const url = new URL(path, window.location.origin);
  if (!user) return <LoginPage invitation={url.pathname === '/register' ? (url.searchParams.get('invitation') ?? undefined) : undefined} />;

  let page;
  const instance = /^\/instances\/([^/]+)$/.exec(url.pathname);
  if (instance?.[1]) page = <InstancePage id={decodeURIComponent(instance[1])} tab={url.searchParams.get('tab') ?? 'connect'} />;
  else if (url.pathname === '/profile') page = <ProfilePage />;
  else if (url.pathname === '/operations') page = <OperationsPage />;
  else if (url.pathname === '/backfill') page = <BackfillPage />;
  else if (url.pathname === '/' || url.pathname === '/register' || url.pathname === '/instances') page = <InstancesPage />;
  else
    page = (
      <section>
        <h1>Not found</h1>
        <p>
          Nothing lives at <code>{url.pathname}</code>. <a href="/">Back to instances</a>
        </p>
      </section>
    );
  return <Layout>{page}</Layout>;
}

document.addEventListener('click', onLinkClick);
render(<App />, document.getElementById('app')!);

/** One instance: connecting (QR, pairing code, sandbox scan), sending, live events, webhook, dead letters, chats. */
import { useEffect, useState } from 'preact/hooks';
import { EVENT_TYPES } from '../../../src/vocabulary.js';
import { api, instanceApi, instanceTokens, rotateInstanceToken } from '../api';
import { onEvent, recentEvents, type EventEnvelope } from '../events';
import { ActionForm, Done, Empty, ErrorBox, Field, HealthBadge, SecretBox, StatusBadge, time, useAction, useCanWrite } from '../ui';
import { useLiveInstances, type Instance } from './instances';
import { SendTab } from './send';

const TABS = [
  ['connect', 'Connect'],
  ['send', 'Send'],
  ['events', 'Live events'],
  ['webhook', 'Webhook & settings'],
  ['dead-letters', 'Dead letters'],
  ['chats', 'Chats'],
] as const;

export function InstancePage({ id, tab }: { id: string; tab: string }) {
  const { items, error } = useLiveInstances();
  const instance = items?.find((i) => i.instanceId === id);
  const [hasToken, setHasToken] = useState(instanceTokens.get(id) !== undefined);
  if (error) return <ErrorBox error={error} />;
  if (!items) return <p class="loading">Loading…</p>;
  if (!instance)
    return (
      <section>
        <h1>Instance not found</h1>
        <Empty>
          No instance has the id <code>{id}</code>. <a href="/">Back to instances</a>
        </Empty>
      </section>
    );
  const base = `/instances/${encodeURIComponent(id)}`;
  return (
    <section>
      <p class="crumbs">
        <a href="/">Instances</a> /
      </p>
      <h1 class="instance-title">
        {instance.instanceName} <StatusBadge status={instance.status} />
        {instance.health ? <HealthBadge health={instance.health} /> : null}
      </h1>
      <p class="muted">
        {instance.network} · {instance.number ? `+${instance.number}` : 'no number linked'} · id <code>{instance.instanceId}</code>
      </p>
      <TokenPanel instance={instance} hasToken={hasToken} onChange={() => setHasToken(instanceTokens.get(id) !== undefined)} />
      <nav class="tabs" aria-label="Instance sections">
        {TABS.map(([key, label]) => (
          <a key={key} href={`${base}?tab=${key}`} aria-current={tab === key ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
      <div class="tab-body">
        {tab === 'connect' ? <ConnectTab instance={instance} hasToken={hasToken} /> : null}
        {tab === 'send' ? hasToken ? <SendTab instance={instance} /> : <NeedsToken /> : null}
        {tab === 'events' ? <EventsTab instance={instance} /> : null}
        {tab === 'webhook' ? <WebhookTab instance={instance} hasToken={hasToken} /> : null}
        {tab === 'webhook' ? <SettingsPanel instance={instance} hasToken={hasToken} /> : null}
        {tab === 'dead-letters' ? <DeadLettersTab instance={instance} /> : null}
        {tab === 'chats' ? <ChatsTab instance={instance} hasToken={hasToken} /> : null}
      </div>
    </section>
  );
}

/** Instance routes need the instance token: the one kept from creation, a pasted one, or a new one by rotation. */
function TokenPanel({ instance, hasToken, onChange }: { instance: Instance; hasToken: boolean; onChange: () => void }) {
  const canWrite = useCanWrite();
  const [pasted, setPasted] = useState('');
  const [shown, setShown] = useState<string | undefined>();
  const rotate = useAction(async () => {
    if (!window.confirm('Issue a new token? Integrations using the current one keep working for the grace period, then must switch.'))
      return;
    setShown((await rotateInstanceToken(instance.instanceId)).token);
    onChange();
  });
  if (shown) return <SecretBox label="New instance token" value={shown} note="Shown only now; kept in this tab until you sign out." />;
  if (hasToken)
    return (
      <p class="muted token-note">
        This tab holds the instance token.{' '}
        <button
          type="button"
          class="link"
          onClick={() => {
            instanceTokens.forget(instance.instanceId);
            onChange();
          }}
        >
          Forget it
        </button>
      </p>
    );
  return (
    <div class="card notice">
      <p>
        Connecting, sending, webhook settings and chats act as the instance, with its token. This tab does not hold it: paste it, or rotate
        to get a new one (the current token then stops working after the grace period).
      </p>
      <ActionForm
        label="Use an instance token"
        class="inline-form"
        onSubmit={() => {
          if (!pasted.trim()) return;
          instanceTokens.set(instance.instanceId, pasted.trim());
          setPasted('');
          onChange();
        }}
      >
        <Field label="Instance token">
          <input name="token" autocomplete="off" value={pasted} onInput={(e) => setPasted(e.currentTarget.value)} />
        </Field>
        <button type="submit">Use this token</button>
        {canWrite ? (
          <button type="button" onClick={() => void rotate.run()} disabled={rotate.busy}>
            Rotate token
          </button>
        ) : null}
      </ActionForm>
      <ErrorBox error={rotate.error} />
    </div>
  );
}

function NeedsToken() {
  return <Empty>This section needs the instance token (see above).</Empty>;
}

function randomNumber(): string {
  return `5511${String(Math.floor(Math.random() * 1e9)).padStart(9, '0')}`;
}

function ConnectTab({ instance, hasToken }: { instance: Instance; hasToken: boolean }) {
  const id = instance.instanceId;
  const lastQr = () => [...recentEvents(id)].reverse().find((e) => e.event === 'QRCODE');
  const [qr, setQr] = useState<string | undefined>(() => qrOf(lastQr()));
  const [pairNumber, setPairNumber] = useState('');
  const [pairingCode, setPairingCode] = useState<string | undefined>();
  const [phone, setPhone] = useState(randomNumber);
  const connected = instance.status === 'CONNECTED';

  useEffect(
    () =>
      onEvent((event) => {
        if (event.instanceId !== id) return;
        if (event.event === 'QRCODE') setQr(qrOf(event));
        if (event.event === 'CONNECTION' && event.data.status === 'CONNECTED') setQr(undefined);
      }),
    [id],
  );

  const connect = useAction(async () => {
    const reply = await instanceApi<{ status: string; qrcode?: string }>(id, 'POST', '/instance/connect');
    if (reply.qrcode) setQr(reply.qrcode);
  });
  const pair = useAction(async () => {
    const reply = await instanceApi<{ pairingCode: string }>(id, 'POST', '/instance/pair', { number: pairNumber });
    setPairingCode(reply.pairingCode);
  });
  const scan = useAction(async () => {
    await api('POST', '/sandbox/scan', { instanceId: id, number: phone });
  });
  const logout = useAction(async () => {
    if (!window.confirm('Log out? The phone link is removed; connecting again needs a new scan.')) return;
    await instanceApi(id, 'POST', '/instance/logout');
  });
  const reconnect = useAction(async () => {
    await api('POST', `/instance/reconnect/${encodeURIComponent(id)}`);
  });

  if (connected)
    return (
      <div class="card connected" data-testid="connected">
        <h2>Connected</h2>
        <p>Linked to {instance.number ? `+${instance.number}` : 'a phone'}.</p>
        <div class="actions">
          <button type="button" onClick={() => void reconnect.run()} disabled={reconnect.busy}>
            Reconnect
          </button>
          {hasToken ? (
            <button type="button" class="danger" onClick={() => void logout.run()} disabled={logout.busy}>
              Log out
            </button>
          ) : null}
        </div>
        <ErrorBox error={reconnect.error ?? logout.error} />
      </div>
    );
  if (!hasToken) return <NeedsToken />;
  return (
    <div class="grid">
      <div class="card">
        <h2>Scan the QR code</h2>
        {qr ? (
          <img class="qr" src={qr} alt="QR code to link a phone" width={264} height={264} data-testid="qr" />
        ) : (
          <Empty>{instance.status === 'QRCODE' ? 'Waiting for the next QR code…' : 'Start connecting to show a QR code.'}</Empty>
        )}
        <p class="muted">
          {instance.network === 'whatsapp'
            ? 'On the phone: WhatsApp › Linked devices › Link a device, then scan. The code is replaced as it expires.'
            : 'A sandbox instance: no phone needed, use “Scan as phone”.'}
        </p>
        <button type="button" class="primary" onClick={() => void connect.run()} disabled={connect.busy}>
          {instance.status === 'QRCODE' ? 'Restart pairing' : 'Connect'}
        </button>
        <ErrorBox error={connect.error} />
      </div>
      {instance.network === 'sandbox' ? (
        <ActionForm label="Scan as phone" onSubmit={() => scan.run()}>
          <h2>Scan as phone (sandbox)</h2>
          <p class="muted">A virtual phone scans the current QR code, as a real one would.</p>
          <Field label="Phone number">
            <input name="phone" inputMode="numeric" pattern="[0-9]{7,15}" value={phone} onInput={(e) => setPhone(e.currentTarget.value)} />
          </Field>
          <button type="submit" class="primary" disabled={scan.busy || instance.status !== 'QRCODE'}>
            Scan as phone
          </button>
          <ErrorBox error={scan.error} />
        </ActionForm>
      ) : null}
      <ActionForm label="Pairing code" onSubmit={() => pair.run()}>
        <h2>Or a pairing code</h2>
        <Field label="Phone number (with country code)">
          <input
            name="pairNumber"
            inputMode="numeric"
            pattern="[0-9]{7,15}"
            required
            value={pairNumber}
            onInput={(e) => setPairNumber(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={pair.busy}>
          Get pairing code
        </button>
        {pairingCode ? (
          <p class="pairing-code" aria-live="polite">
            Enter on the phone: <strong>{pairingCode}</strong>
          </p>
        ) : null}
        <ErrorBox error={pair.error} />
      </ActionForm>
    </div>
  );
}

function qrOf(event: EventEnvelope | undefined): string | undefined {
  const value = event?.data.qrcode;
  return typeof value === 'string' ? value : undefined;
}

function EventsTab({ instance }: { instance: Instance }) {
  const [events, setEvents] = useState<EventEnvelope[]>(() => [...recentEvents(instance.instanceId)]);
  const [paused, setPaused] = useState(false);
  useEffect(
    () =>
      onEvent((event) => {
        if (event.instanceId !== instance.instanceId || paused) return;
        setEvents((list) => [...list.slice(-199), event]);
      }),
    [instance.instanceId, paused],
  );
  return (
    <div class="card">
      <div class="row">
        <h2>Live events</h2>
        <button type="button" onClick={() => setPaused(!paused)}>
          {paused ? 'Resume' : 'Pause'}
        </button>
        <button type="button" onClick={() => setEvents([])}>
          Clear
        </button>
      </div>
      {events.length === 0 ? <Empty>No event since this page opened. Connect, send or receive a message to see some.</Empty> : null}
      <ol class="event-tail" aria-live="polite" aria-label="Event tail">
        {[...events].reverse().map((event) => (
          <li key={event.eventId} data-event={event.event}>
            <details>
              <summary>
                <strong>{event.event}</strong> <span class="muted">{time(event.timestamp)}</span>
              </summary>
              <pre>{JSON.stringify(event.data, null, 2)}</pre>
            </details>
          </li>
        ))}
      </ol>
    </div>
  );
}

function WebhookTab({ instance, hasToken }: { instance: Instance; hasToken: boolean }) {
  const [url, setUrl] = useState(instance.webhookUrl ?? '');
  const [all, setAll] = useState(instance.webhookEvents === 'ALL');
  const [selected, setSelected] = useState<string[]>(instance.webhookEvents === 'ALL' ? [] : instance.webhookEvents);
  const [secret, setSecret] = useState('');
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    setSaved(false);
    await instanceApi(instance.instanceId, 'POST', '/instance/webhook', {
      webhookUrl: url.trim() === '' ? null : url.trim(),
      webhookEvents: all ? 'ALL' : selected,
      ...(secret ? { webhookSecret: secret } : {}),
    });
    setSecret('');
    setSaved(true);
  });
  if (!hasToken) return <NeedsToken />;
  return (
    <ActionForm label="Webhook settings" onSubmit={() => save.run()}>
      <h2>Webhook</h2>
      <Field label="URL" hint="Empty: no webhook delivery. Events are POSTed as JSON, signed with the secret (X-Webhook-Signature).">
        <input name="webhookUrl" type="url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
      </Field>
      <fieldset>
        <legend>Events</legend>
        <label class="check">
          <input
            type="checkbox"
            checked={all}
            onChange={(e) => {
              setAll(e.currentTarget.checked);
              // Leaving "all" starts from every type ticked, so the filter is narrowed rather than emptied.
              if (!e.currentTarget.checked && selected.length === 0) setSelected([...EVENT_TYPES]);
            }}
          />{' '}
          All events
        </label>
        {!all
          ? EVENT_TYPES.map((type) => (
              <label class="check" key={type}>
                <input
                  type="checkbox"
                  checked={selected.includes(type)}
                  onChange={(e) => setSelected(e.currentTarget.checked ? [...selected, type] : selected.filter((t) => t !== type))}
                />{' '}
                {type}
              </label>
            ))
          : null}
      </fieldset>
      <Field label="New signing secret (optional)" hint="Leave empty to keep the current one; it cannot be read back.">
        <input name="webhookSecret" type="password" autocomplete="off" value={secret} onInput={(e) => setSecret(e.currentTarget.value)} />
      </Field>
      <button type="submit" class="primary" disabled={save.busy}>
        Save webhook
      </button>
      <Done>{saved ? 'Saved.' : null}</Done>
      <ErrorBox error={save.error} />
    </ActionForm>
  );
}

/** The proxy (an admin route) and behaviour settings (an instance route). */
function SettingsPanel({ instance, hasToken }: { instance: Instance; hasToken: boolean }) {
  const canWrite = useCanWrite();
  const [proxy, setProxy] = useState(instance.proxyUrl ?? '');
  const [interactive, setInteractive] = useState<boolean | undefined>();
  const [saved, setSaved] = useState<string | undefined>();
  const load = useAction(async () => {
    const settings = await instanceApi<{ interactiveMessages: boolean }>(instance.instanceId, 'GET', '/instance/settings');
    setInteractive(settings.interactiveMessages);
  });
  useEffect(() => {
    if (hasToken) void load.run();
  }, [instance.instanceId, hasToken]);
  const saveProxy = useAction(async () => {
    setSaved(undefined);
    const reply = await api<{ proxyUrl: string | null }>('POST', `/instance/proxy/${encodeURIComponent(instance.instanceId)}`, {
      proxyUrl: proxy.trim() === '' ? null : proxy.trim(),
    });
    setProxy(reply.proxyUrl ?? '');
    setSaved('Proxy saved.');
  });
  const saveInteractive = useAction(async (value: boolean) => {
    setSaved(undefined);
    const reply = await instanceApi<{ interactiveMessages: boolean }>(instance.instanceId, 'POST', '/instance/settings', {
      interactiveMessages: value,
    });
    setInteractive(reply.interactiveMessages);
    setSaved('Settings saved.');
  });
  return (
    <div class="card">
      <h2>Network settings</h2>
      {canWrite ? (
        <ActionForm label="Proxy settings" class="inline-form" onSubmit={() => saveProxy.run()}>
          <Field
            label="Proxy"
            hint="http(s)://, socks4(a):// or socks5(h)://, optionally with user:password@. Empty: no proxy. A connected instance reconnects to apply it."
          >
            <input name="proxyUrl" value={proxy} onInput={(e) => setProxy(e.currentTarget.value)} />
          </Field>
          <button type="submit" disabled={saveProxy.busy}>
            Save proxy
          </button>
        </ActionForm>
      ) : null}
      {hasToken && interactive !== undefined ? (
        <label class="check">
          <input
            type="checkbox"
            checked={interactive}
            disabled={saveInteractive.busy}
            onChange={(e) => void saveInteractive.run(e.currentTarget.checked)}
          />{' '}
          Allow interactive messages (buttons, lists, carousels, PIX) on WhatsApp — rendered inconsistently by phones, adds ban risk
        </label>
      ) : null}
      <Done>{saved}</Done>
      <ErrorBox error={load.error ?? saveProxy.error ?? saveInteractive.error} />
    </div>
  );
}

interface DeadLetter {
  id: string;
  event: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  lastAttemptAt: string;
}

function DeadLettersTab({ instance }: { instance: Instance }) {
  const canWrite = useCanWrite();
  const [items, setItems] = useState<DeadLetter[] | undefined>();
  const [outcome, setOutcome] = useState<string | undefined>();
  const load = useAction(async () => {
    setItems(
      (await api<{ items: DeadLetter[] }>('GET', `/instance/webhook-dead-letters/${encodeURIComponent(instance.instanceId)}?limit=100`))
        .items,
    );
  });
  const retry = useAction(async (letter: DeadLetter) => {
    const reply = await api<{ delivered: boolean; status: number | null; error?: string }>(
      'POST',
      `/instance/webhook-dead-letters/retry/${encodeURIComponent(letter.id)}`,
    );
    setOutcome(
      reply.delivered
        ? `${letter.event} delivered (HTTP ${reply.status ?? '?'}).`
        : `${letter.event} not delivered: ${reply.error ?? `HTTP ${reply.status ?? '?'}`}.`,
    );
    await load.run();
  });
  useEffect(() => {
    void load.run();
  }, [instance.instanceId]);
  return (
    <div class="card">
      <div class="row">
        <h2>Dead letters</h2>
        <button type="button" onClick={() => void load.run()} disabled={load.busy}>
          Refresh
        </button>
      </div>
      <p class="muted">Webhook events that failed every automatic attempt. A retry sends the same event again, once.</p>
      <Done>{outcome}</Done>
      <ErrorBox error={load.error ?? retry.error} />
      {items?.length === 0 ? <Empty>No dead letter: every webhook event was delivered (or none failed for good yet).</Empty> : null}
      {items && items.length > 0 ? (
        <ul class="list" aria-label="Dead letters">
          {items.map((letter) => (
            <li key={letter.id} class="dead-letter">
              <span>
                <strong>{letter.event}</strong> · {letter.attempts} attempts ·{' '}
                {letter.lastStatus !== null ? `HTTP ${letter.lastStatus}` : (letter.lastError ?? 'no answer')} ·{' '}
                <span class="muted">{time(letter.lastAttemptAt)}</span>
              </span>
              {canWrite ? (
                <button type="button" onClick={() => void retry.run(letter)} disabled={retry.busy}>
                  Retry
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

interface Chat {
  chatId: string;
  name: string | null;
  unreadCount: number;
  lastMessage: ChatMessage | null;
}

interface ChatMessage {
  key: { id: string; fromMe: boolean; remoteJid: string };
  pushName?: string;
  message: Record<string, unknown>;
  messageTimestamp: number;
}

/** One line for a stored message: its text, or its kind with what names it (caption, question, place, card). */
function textOf(message: ChatMessage): string {
  const m = message.message;
  if (typeof m.conversation === 'string') return m.conversation;
  const extended = m.extendedTextMessage as { text?: string } | undefined;
  if (extended?.text) return extended.text;
  // Content keys end in Message (or MessageV2, V3); others such as messageContextInfo are metadata.
  for (const [kind, value] of Object.entries(m).filter(([key]) => /Message(V\d)?$/.test(key))) {
    const content = (value ?? {}) as Record<string, unknown>;
    const label = kind
      .replace(/Message(V\d)?$/, '')
      .replace(/([A-Z])/g, ' $1')
      .toLowerCase();
    const named = [content.caption, content.name, content.displayName, content.text, content.title].find(
      (v): v is string => typeof v === 'string' && v !== '',
    );
    return named ? `[${label}] ${named}` : `[${label}]`;
  }
  return '';
}

function recipientOf(chatId: string): string {
  const person = /^(\d+)(?::\d+)?@s\.whatsapp\.net$/.exec(chatId);
  return person?.[1] ?? chatId;
}

function ChatsTab({ instance, hasToken }: { instance: Instance; hasToken: boolean }) {
  const id = instance.instanceId;
  const [chats, setChats] = useState<Chat[] | undefined>();
  const [open, setOpen] = useState<string | undefined>();
  const [messages, setMessages] = useState<ChatMessage[]>([]);
  const [reply, setReply] = useState('');
  const list = useAction(async () => {
    setChats((await instanceApi<{ items: Chat[] }>(id, 'GET', '/chat/list?limit=100')).items);
  });
  const history = useAction(async (chatId: string) => {
    const page = await instanceApi<{ items: ChatMessage[] }>(id, 'GET', `/chat/history?limit=30&chatId=${encodeURIComponent(chatId)}`);
    // The API answers newest first; oldest first reads like a chat (reversed, so messages of one second keep their order).
    setMessages([...page.items].reverse());
  });
  const send = useAction(async () => {
    if (!open) return;
    await instanceApi(id, 'POST', '/send/text', { number: recipientOf(open), text: reply });
    setReply('');
    await history.run(open);
  });
  useEffect(() => {
    if (hasToken) void list.run();
  }, [id, hasToken]);
  useEffect(
    () =>
      onEvent((event) => {
        if (event.instanceId !== id || (event.event !== 'MESSAGE' && event.event !== 'SEND_MESSAGE')) return;
        void list.run();
        if (open) void history.run(open);
      }),
    [id, open],
  );
  if (!hasToken) return <NeedsToken />;
  return (
    <div class="grid chats">
      <div class="card">
        <div class="row">
          <h2>Chats</h2>
          <button type="button" onClick={() => void list.run()} disabled={list.busy}>
            Refresh
          </button>
        </div>
        <ErrorBox error={list.error} />
        {chats?.length === 0 ? <Empty>No chat yet.</Empty> : null}
        <ul class="list" aria-label="Chats">
          {chats?.map((chat) => (
            <li key={chat.chatId}>
              <button
                type="button"
                class={`chat-item ${open === chat.chatId ? 'selected' : ''}`}
                onClick={() => {
                  setOpen(chat.chatId);
                  void history.run(chat.chatId);
                }}
              >
                <strong>{chat.name ?? recipientOf(chat.chatId)}</strong>
                {chat.unreadCount > 0 ? <span class="badge">{chat.unreadCount}</span> : null}
                <small class="muted">{chat.lastMessage ? textOf(chat.lastMessage) : ''}</small>
              </button>
            </li>
          ))}
        </ul>
      </div>
      <div class="card">
        {open ? (
          <>
            <h2>{chats?.find((chat) => chat.chatId === open)?.name ?? recipientOf(open)}</h2>
            <ErrorBox error={history.error} />
            {messages.length === 0 ? <Empty>No stored message in this chat.</Empty> : null}
            <ol class="messages" aria-label="Messages">
              {messages.map((m) => (
                <li key={m.key.id} class={m.key.fromMe ? 'mine' : 'theirs'}>
                  <span>{textOf(m)}</span>
                  <small class="muted">{new Date(m.messageTimestamp * 1000).toLocaleTimeString()}</small>
                </li>
              ))}
            </ol>
            <ActionForm label="Reply in this chat" class="inline-form" onSubmit={() => send.run()}>
              <Field label="Reply">
                <input name="reply" required value={reply} onInput={(e) => setReply(e.currentTarget.value)} />
              </Field>
              <button type="submit" class="primary" disabled={send.busy}>
                Send
              </button>
            </ActionForm>
            <ErrorBox error={send.error} />
          </>
        ) : (
          <Empty>Pick a chat to read its recent messages and reply.</Empty>
        )}
      </div>
    </div>
  );
}

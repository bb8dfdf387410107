/** Small shared pieces: forms, fields, error, success and empty states, copying, loading. */
import { cloneElement, type ComponentChildren, type VNode } from 'preact';
import { useEffect, useId, useState } from 'preact/hooks';
import { currentUser } from './api';
import { useSignal } from './store';

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : 'something went wrong';
  return (
    <p class="error" role="alert">
      {message}
    </p>
  );
}

/** A success line, announced to screen readers. */
export function Done({ children }: { children: ComponentChildren }) {
  if (!children) return null;
  return (
    <p class="success" role="status">
      {children}
    </p>
  );
}

/** A form that runs `onSubmit` instead of navigating. */
export function ActionForm(props: { label: string; class?: string; onSubmit: () => unknown; children: ComponentChildren }) {
  return (
    <form
      class={props.class ?? 'card'}
      aria-label={props.label}
      onSubmit={(e) => {
        e.preventDefault();
        void props.onSubmit();
      }}
    >
      {props.children}
    </form>
  );
}

/** Whether the signed-in user may change things (viewers are read-only; the gateway refuses them anyway). */
export function useCanWrite(): boolean {
  const user = useSignal(currentUser);
  return user !== null && user !== undefined && user.role !== 'viewer';
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/**
 * A labelled control. The label points at the control by id (not by wrapping it), so the control's
 * accessible name is the label alone, not the label plus a select's option texts; the hint describes it.
 */
export function Field(props: { label: string; children: VNode<{ id?: string; 'aria-describedby'?: string }>; hint?: string | undefined }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {cloneElement(props.children, { id, ...(props.hint ? { 'aria-describedby': `${id}-hint` } : {}) })}
      {props.hint ? <small id={`${id}-hint`}>{props.hint}</small> : null}
    </div>
  );
}

/** A name as the gateway accepts it for instances and failover groups: 1 to 64 letters, digits, `.`, `_`, `-`. */
export function NameInput(props: { name: string; value: string; onInput: (value: string) => void; id?: string }) {
  return (
    <input
      id={props.id}
      name={props.name}
      required
      pattern="[A-Za-z0-9._\-]{1,64}"
      title="1 to 64 letters, digits, . _ -"
      value={props.value}
      onInput={(e) => props.onInput(e.currentTarget.value)}
    />
  );
}

export function StatusBadge({ status }: { status: string }) {
  return (
    <span class={`badge status-${status.toLowerCase()}`} data-status={status}>
      {status}
    </span>
  );
}

/** An instance's health score; what lowered it is listed beside it. */
export function HealthBadge({ health }: { health: { score: number; reasons: string[] } }) {
  const level = health.score >= 80 ? 'good' : health.score >= 50 ? 'fair' : 'poor';
  return (
    <span class="health">
      <span class={`badge health-${level}`} data-health={health.score}>
        health {health.score}
      </span>
      {health.reasons.length > 0 ? <small class="muted"> {health.reasons.join(', ')}</small> : null}
    </span>
  );
}

/** A secret shown once, with a copy button. */
export function SecretBox({ label, value, note }: { label: string; value: string; note?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return (
    <div class="secret" role="status">
      <strong>{label}</strong>
      <code data-testid="secret-value">{value}</code>
      <button type="button" onClick={() => void copy()}>
        {copied ? 'Copied' : 'Copy'}
      </button>
      {note ? <small>{note}</small> : null}
    </div>
  );
}

/** Runs an async action, tracking busy state and its error. */
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<void>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (...args: A) => {
    setBusy(true);
    setError(null);
    try {
      await action(...args);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, setError };
}

export function time(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** Loads a value when mounted (and when `deps` change), keeping its error; reload() fetches again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [value, setValue] = useState<T | undefined>();
  const [error, setError] = useState<unknown>(null);
  const reload = () =>
    load().then(
      (v) => {
        setValue(v);
        setError(null);
      },
      (e: unknown) => setError(e),
    );
  useEffect(() => {
    void reload();
  }, deps);
  return { value, error, reload };
}

/** Backfill: re-deliver an instance's stored events to its webhook or a channel, and follow the jobs. */
import { useEffect, useState } from 'preact/hooks';
import { EVENT_TYPES } from '../../../src/vocabulary.js';
import { api, type Page } from '../api';
import { ActionForm, Done, Empty, ErrorBox, Field, time, useAction, useCanWrite, useLoad } from '../ui';
import { loadInstances, type Instance } from './instances';

interface Job {
  jobId: string;
  instanceId: string;
  target: string;
  since: string;
  until: string | null;
  events: string[] | null;
  ratePerSecond: number;
  status: 'queued' | 'running' | 'completed' | 'cancelled' | 'failed';
  total: number;
  delivered: number;
  lastEventId: string | null;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
}

const ACTIVE = new Set<Job['status']>(['queued', 'running']);
/** How often the list is fetched again while a job is under way. */
const POLL_MS = 1000;

function hourAgo(): string {
  return new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
}

function StartForm({ instances, onStarted }: { instances: Instance[]; onStarted: (job: Job) => void }) {
  const channels = useLoad(() =>
    api<{ channels: Record<string, unknown> }>('GET', '/admin/stats').then((s) => [...new Set(['webhook', ...Object.keys(s.channels)])]),
  );
  const [instanceId, setInstanceId] = useState(instances[0]?.instanceId ?? '');
  const [since, setSince] = useState(hourAgo);
  const [until, setUntil] = useState('');
  const [target, setTarget] = useState('webhook');
  const [events, setEvents] = useState<string[]>([]);
  const [rate, setRate] = useState('');
  const [started, setStarted] = useState<string | undefined>();
  const start = useAction(async () => {
    setStarted(undefined);
    const job = await api<Job>('POST', '/admin/backfill', {
      instanceId,
      since: since.trim(),
      target,
      ...(until.trim() ? { until: until.trim() } : {}),
      ...(events.length > 0 ? { events } : {}),
      ...(rate ? { ratePerSecond: Number(rate) } : {}),
    });
    setStarted(`Job ${job.jobId} started: ${job.total} events to re-deliver.`);
    onStarted(job);
  });
  if (instances.length === 0) return <Empty>No instance yet: a backfill re-delivers the stored events of one.</Empty>;
  return (
    <ActionForm label="Start a backfill" onSubmit={() => start.run()}>
      <h2>Start a backfill</h2>
      <p class="muted">
        Sends an instance's stored events again, in their original order and with their original <code>eventId</code>, marked{' '}
        <code>"redelivered": true</code>. Receivers that deduplicate by <code>eventId</code> see no duplicates.
      </p>
      <div class="fields-row">
        <Field label="Instance">
          <select name="instanceId" value={instanceId} onChange={(e) => setInstanceId(e.currentTarget.value)}>
            {instances.map((i) => (
              <option key={i.instanceId} value={i.instanceId}>
                {i.instanceName}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Target">
          <select name="target" value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
            {(channels.value ?? ['webhook']).map((name) => (
              <option key={name} value={name}>
                {name === 'webhook' ? "webhook (the instance's URL)" : name}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Events per second" hint="Empty: the gateway's default.">
          <input name="ratePerSecond" type="number" min={1} max={10000} value={rate} onInput={(e) => setRate(e.currentTarget.value)} />
        </Field>
      </div>
      <div class="fields-row">
        <Field label="Since" hint="An ISO time (UTC) or the eventId of a stored event; inclusive.">
          <input name="since" required value={since} onInput={(e) => setSince(e.currentTarget.value)} />
        </Field>
        <Field label="Until (optional)" hint="Empty: up to the last event stored now.">
          <input name="until" value={until} onInput={(e) => setUntil(e.currentTarget.value)} />
        </Field>
      </div>
      <fieldset>
        <legend>Events (none ticked: all)</legend>
        {EVENT_TYPES.map((type) => (
          <label class="check" key={type}>
            <input
              type="checkbox"
              checked={events.includes(type)}
              onChange={(e) => setEvents(e.currentTarget.checked ? [...events, type] : events.filter((t) => t !== type))}
            />
            {type}
          </label>
        ))}
      </fieldset>
      <button type="submit" class="primary" disabled={start.busy || !instanceId}>
        Start backfill
      </button>
      <Done>{started}</Done>
      <ErrorBox error={start.error ?? channels.error} />
    </ActionForm>
  );
}

function JobRow({ job, name, canWrite, onCancel }: { job: Job; name: string; canWrite: boolean; onCancel: () => void }) {
  const percent = job.total === 0 ? 100 : Math.round((job.delivered / job.total) * 100);
  return (
    <li class="job" data-job={job.jobId} data-status={job.status}>
      <div class="card-head">
        <span>
          <strong>{name}</strong> → {job.target}
        </span>
        <span class={`badge job-${job.status}`}>{job.status}</span>
      </div>
      <div class="job-progress">
        <progress max={Math.max(job.total, 1)} value={job.total === 0 ? 1 : job.delivered} aria-label={`Progress of job ${job.jobId}`} />
        <span data-testid="job-count">
          {job.delivered} of {job.total} ({percent}%)
        </span>
      </div>
      <p class="muted">
        {job.since}
        {job.until ? ` → ${job.until}` : ' → last stored'} · {job.events ? job.events.join(', ') : 'all events'} · {job.ratePerSecond}/s ·
        started {time(job.createdAt)}
        {job.finishedAt ? ` · finished ${time(job.finishedAt)}` : ''}
      </p>
      {job.error ? (
        <p class="error" role="alert">
          {job.error}
          {job.lastEventId ? ` (last delivered: ${job.lastEventId}; a new job can start after it)` : ''}
        </p>
      ) : null}
      {canWrite && ACTIVE.has(job.status) ? (
        <button type="button" class="danger" onClick={onCancel}>
          Cancel
        </button>
      ) : null}
    </li>
  );
}

export function BackfillPage() {
  const canWrite = useCanWrite();
  const instances = useLoad(loadInstances);
  const jobs = useLoad(() => api<Page<Job>>('GET', '/admin/backfill?limit=50').then((p) => p.items));
  const cancel = useAction(async (job: Job) => {
    await api('POST', `/admin/backfill/${encodeURIComponent(job.jobId)}/cancel`);
    await jobs.reload();
  });
  const active = jobs.value?.some((job) => ACTIVE.has(job.status)) ?? false;
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => void jobs.reload(), POLL_MS);
    return () => clearInterval(timer);
  }, [active]);
  const nameOf = (id: string) => instances.value?.find((i) => i.instanceId === id)?.instanceName ?? id;
  return (
    <section>
      <h1>Backfill</h1>
      {canWrite ? null : <p class="muted">Read-only: viewers see the jobs but cannot start or cancel them.</p>}
      <ErrorBox error={instances.error} />
      {canWrite && instances.value ? <StartForm instances={instances.value} onStarted={() => void jobs.reload()} /> : null}
      <div class="card">
        <div class="card-head">
          <h2>Jobs</h2>
          <button type="button" onClick={() => void jobs.reload()}>
            Refresh jobs
          </button>
        </div>
        <ErrorBox error={jobs.error ?? cancel.error} />
        {jobs.value === undefined && !jobs.error ? <p class="loading">Loading jobs…</p> : null}
        {jobs.value?.length === 0 ? <Empty>No backfill job yet.</Empty> : null}
        {jobs.value && jobs.value.length > 0 ? (
          <ul class="list" aria-label="Backfill jobs">
            {jobs.value.map((job) => (
              <JobRow key={job.jobId} job={job} name={nameOf(job.instanceId)} canWrite={canWrite} onCancel={() => void cancel.run(job)} />
            ))}
          </ul>
        ) : null}
      </div>
    </section>
  );
}

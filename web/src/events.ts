/**
 * The admin WebSocket (/api/v1/admin/ws): one connection per tab with the signed-in user's access
 * token, every instance's events. Reconnects with a fresh token when the server closes it (4401 at
 * token expiry) and with a growing delay after network trouble.
 */
import { getAccessToken, refreshSession } from './api';
import { signal } from './store';

export interface EventEnvelope {
  event: string;
  instanceId: string;
  instanceName: string;
  data: Record<string, unknown>;
  eventId: string;
  timestamp: string;
}

type Listener = (event: EventEnvelope) => void;

const listeners = new Set<Listener>();
/** The last events per instance (newest last), for the live tail. */
const recent = new Map<string, EventEnvelope[]>();
const KEEP = 200;
/** `refused`: the gateway does not stream events to this user (viewers; close code 4403); no retry. */
export const socketState = signal<'connecting' | 'open' | 'closed' | 'refused'>('closed');

let socket: WebSocket | undefined;
let stopped = true;
let delay = 1000;
let retryTimer: ReturnType<typeof setTimeout> | undefined;

export function onEvent(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function recentEvents(instanceId: string): EventEnvelope[] {
  return recent.get(instanceId) ?? [];
}

export function startEvents(): void {
  stopped = false;
  if (!socket) open();
}

export function stopEvents(): void {
  stopped = true;
  clearTimeout(retryTimer);
  socket?.close(1000, 'signed out');
  socket = undefined;
  recent.clear();
  socketState.value = 'closed';
}

function open(): void {
  const token = getAccessToken();
  if (!token || stopped) return;
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const ws = new WebSocket(`${scheme}://${location.host}/api/v1/admin/ws?token=${encodeURIComponent(token)}`);
  socket = ws;
  socketState.value = 'connecting';
  ws.onopen = () => {
    delay = 1000;
    socketState.value = 'open';
  };
  ws.onmessage = (message) => {
    let event: EventEnvelope;
    try {
      event = JSON.parse(String(message.data)) as EventEnvelope;
    } catch {
      return;
    }
    const list = recent.get(event.instanceId) ?? [];
    list.push(event);
    if (list.length > KEEP) list.splice(0, list.length - KEEP);
    recent.set(event.instanceId, list);
    for (const listener of [...listeners]) listener(event);
  };
  ws.onclose = (close) => {
    if (socket === ws) socket = undefined;
    socketState.value = close.code === 4403 ? 'refused' : 'closed';
    if (stopped || close.code === 4403) return;
    const again = async () => {
      if (close.code === 4401) await refreshSession();
      open();
    };
    retryTimer = setTimeout(() => void again(), close.code === 4401 ? 0 : delay);
    delay = Math.min(delay * 2, 15_000);
  };
}

/**
 * One instance's proxy, applied to every road its WhatsApp session takes: the chat WebSocket
 * (Baileys' `agent`), media uploads (`fetchAgent`, Node's https module) and everything Baileys fetches
 * with the global fetch — media downloads, link previews, profile pictures — through an undici
 * dispatcher (`options.dispatcher`). http://, https:// and socks4/4a/5/5h:// URLs are accepted.
 */
import type { Agent as HttpAgent } from 'node:http';
import type { Socket } from 'node:net';
import { HttpsProxyAgent } from 'https-proxy-agent';
import { SocksClient, type SocksProxy } from 'socks';
import { SocksProxyAgent } from 'socks-proxy-agent';
import { Agent as UndiciAgent, buildConnector, ProxyAgent, type Dispatcher } from 'undici';
import { errors } from '../../errors.js';

export const PROXY_SCHEMES = ['http', 'https', 'socks', 'socks4', 'socks4a', 'socks5', 'socks5h'] as const;

export interface ProxyRoutes {
  /** For the WebSocket and for uploads (node:http(s) agents). */
  agent: HttpAgent;
  /** For Node's global fetch (downloads, link previews). */
  dispatcher: Dispatcher;
  close(): Promise<void>;
}

/** Checks a proxy URL and returns it normalised; AppError 400 otherwise. */
export function parseProxyUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.badRequest('proxyUrl is not a valid URL');
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (!(PROXY_SCHEMES as readonly string[]).includes(scheme)) {
    throw errors.badRequest(`proxyUrl scheme must be one of ${PROXY_SCHEMES.map((s) => `${s}://`).join(', ')}`);
  }
  if (!url.hostname) throw errors.badRequest('proxyUrl needs a host');
  return url;
}

function socksProxy(url: URL): SocksProxy {
  const scheme = url.protocol.replace(/:$/, '');
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port) || 1080,
    type: scheme === 'socks4' || scheme === 'socks4a' ? 4 : 5,
    ...(url.username ? { userId: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
  };
}

/** An undici dispatcher that opens each connection through a SOCKS proxy (TLS on top for https). */
function socksDispatcher(url: URL): Dispatcher {
  const proxy = socksProxy(url);
  const tls = buildConnector({});
  return new UndiciAgent({
    connect(options, callback) {
      const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
      SocksClient.createConnection({ proxy, command: 'connect', destination: { host: options.hostname, port } })
        .then(({ socket }: { socket: Socket }) => {
          if (options.protocol === 'https:') tls({ ...options, httpSocket: socket }, callback);
          else callback(null, socket);
        })
        .catch((error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), null));
    },
  });
}

export function proxyRoutes(raw: string): ProxyRoutes {
  const url = parseProxyUrl(raw);
  if (url.protocol === 'http:' || url.protocol === 'https:') {
    const dispatcher = new ProxyAgent(url.toString());
    return { agent: new HttpsProxyAgent(url), dispatcher, close: () => dispatcher.close() };
  }
  const dispatcher = socksDispatcher(url);
  return { agent: new SocksProxyAgent(url), dispatcher, close: () => dispatcher.close() };
}

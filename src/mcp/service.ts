/**
 * The MCP server: one SDK `Server` per session (or per stateless request) built for its caller,
 * the session table, resource subscriptions and the waits of `wait_for_message`. Incoming events
 * reach it through `onEvent` (the module hooks it into the session registry's event order).
 */
import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyBaseLogger } from 'fastify';
import { Type, type TObject } from 'typebox';
import type { McpConfig } from '../config.js';
import { errors } from '../errors.js';
import { hashToken } from '../instance-registry/tokens.js';
import type { CanonicalEvent } from '../network/port.js';
import { VERSION } from '../version.js';
import { chatJid, toolError } from './format.js';
import {
  InvalidPromptArguments,
  PROMPTS,
  promptMessages,
  readResource,
  resourceList,
  RESOURCE_TEMPLATES,
  parseResourceUri,
} from './resources.js';
import { readOnly, RestFailure, type Caller, type GatewayRest, type RestCall } from './rest.js';
import { mcpSdk, type McpSdk } from './sdk.js';
import { ANNOTATIONS, InstanceIdArgument, TOOLS, type ToolContext, type ToolDefinition } from './tools.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const INSTRUCTIONS =
  'Waygate gateway to WhatsApp. Chats are numbers (digits with country code) or JIDs (`…@s.whatsapp.net`, `…@g.us`). ' +
  'To hold a conversation: get_chat to read, send_text to answer (quoted.id to reply to a message), wait_for_message to wait for the answer. ' +
  'Sending reaches real people: confirm with the user before sending.';

/** The per-request facts the HTTP layer hands to the handlers (as the transport's authInfo). */
export interface RequestFacts {
  remoteAddress: string;
  caller: Caller;
}

interface Subscription {
  instanceId: string;
  /** undefined: the chat list (every message of the instance). */
  chat: string | undefined;
}

export interface McpSession {
  readonly id: string;
  readonly identity: string;
  readonly caller: Caller;
  readonly transport: StreamableHTTPServerTransport;
  readonly server: Server;
  readonly subscriptions: Map<string, Subscription>;
  lastSeen: number;
  /** Open GET event streams: a session that listens is not idle. */
  streams: number;
}

interface Waiter {
  instanceId: string;
  chat: string | undefined;
  resolve: (message: Record<string, unknown> | undefined) => void;
}

export interface McpServiceOptions {
  rest: GatewayRest;
  config: McpConfig;
  log: FastifyBaseLogger;
  now: () => number;
  /** Media up to this size is embedded in tool results; larger is linked. */
  embedMaxBytes: number;
}

/**
 * Who a caller is, for binding a session to whoever opened it (never the key itself): a web user by
 * their id, so the session outlives the short-lived access token it was opened with; others by key.
 */
export function identityOf(caller: Caller): string {
  return caller.kind === 'admin' && caller.user ? caller.user.id : hashToken(caller.key);
}

export class McpService {
  private readonly sessions = new Map<string, McpSession>();
  private readonly waiters = new Set<Waiter>();
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly ajv = addFormats(new Ajv({ allErrors: false, useDefaults: true, strict: false, coerceTypes: false }));
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly options: McpServiceOptions) {}

  start(): void {
    const every = Math.min(60_000, (this.options.config.sessionIdleSeconds * 1000) / 2);
    this.sweeper ??= setInterval(() => void this.sweep(), every);
    this.sweeper.unref();
  }

  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    await this.closeAll();
  }

  /** Ends every session and wait (before the HTTP server closes: open event streams would hold it). */
  async closeAll(): Promise<void> {
    for (const waiter of this.waiters) waiter.resolve(undefined);
    this.waiters.clear();
    await Promise.all([...this.sessions.values()].map((session) => session.transport.close().catch(() => undefined)));
    this.sessions.clear();
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** The session with this id, if the same key opened it. */
  session(id: string, caller: Caller): McpSession {
    const session = this.sessions.get(id);
    // Another key's session answers like an unknown one: ids are not confirmed to strangers.
    if (!session || session.identity !== identityOf(caller)) throw errors.mcpSessionUnknown();
    session.lastSeen = this.options.now();
    return session;
  }

  /** An open GET event stream keeps its session from being idle while it lasts. */
  watchStream(session: McpSession, response: { once(event: 'close', listener: () => void): unknown }): void {
    session.streams += 1;
    response.once('close', () => {
      session.streams -= 1;
      session.lastSeen = this.options.now();
    });
  }

  /** A new session for an initialize request; it is registered once the SDK has given it its id. */
  async openSession(caller: Caller): Promise<StreamableHTTPServerTransport> {
    if (this.sessions.size >= this.options.config.maxSessions) throw errors.mcpTooManySessions();
    const sdk = await mcpSdk();
    const subscriptions = new Map<string, Subscription>();
    const server = this.buildServer(sdk, caller, subscriptions);
    const transport: StreamableHTTPServerTransport = new sdk.StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.sessions.set(id, {
          id,
          identity: identityOf(caller),
          caller,
          transport,
          server,
          subscriptions,
          lastSeen: this.options.now(),
          streams: 0,
        });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) this.sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return transport;
  }

  /** A one-request server (no session): closed by the caller when the response ends. */
  async stateless(caller: Caller): Promise<{ transport: StreamableHTTPServerTransport; close(): Promise<void> }> {
    const sdk = await mcpSdk();
    const server = this.buildServer(sdk, caller, undefined);
    const transport = new sdk.StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    return { transport, close: () => server.close() };
  }

  /** Incoming and sent messages: resource updates to subscribers, incoming ones to waiting tools. */
  onEvent(instanceId: string, event: CanonicalEvent): void {
    if (event.type !== 'MESSAGE' && event.type !== 'SEND_MESSAGE') return;
    // Every message of every instance passes here: with no one waiting or subscribed there is nothing to do.
    if (this.waiters.size === 0 && this.sessions.size === 0) return;
    const key = event.data.key as { remoteJid?: unknown; fromMe?: unknown } | undefined;
    if (typeof key?.remoteJid !== 'string') return;
    const chat = chatJid(key.remoteJid);
    if (event.type === 'MESSAGE' && key.fromMe !== true) {
      for (const waiter of this.waiters) {
        if (waiter.instanceId === instanceId && (waiter.chat === undefined || waiter.chat === chat)) waiter.resolve(event.data);
      }
    }
    for (const session of this.sessions.values()) {
      for (const [uri, subscription] of session.subscriptions) {
        if (subscription.instanceId !== instanceId || (subscription.chat !== undefined && subscription.chat !== chat)) continue;
        session.server
          .sendResourceUpdated({ uri })
          .catch((error: unknown) => this.options.log.debug({ err: error }, 'MCP resource update not sent'));
      }
    }
  }

  private nextMessage(
    instanceId: string,
    chat: string | undefined,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        instanceId,
        chat,
        resolve: (message) => {
          clearTimeout(timer);
          signal.removeEventListener('abort', cancel);
          this.waiters.delete(waiter);
          resolve(message);
        },
      };
      const cancel = () => waiter.resolve(undefined);
      const timer = setTimeout(cancel, timeoutMs);
      if (signal.aborted) return resolve(undefined);
      signal.addEventListener('abort', cancel, { once: true });
      this.waiters.add(waiter);
    });
  }

  private async sweep(): Promise<void> {
    const idleBefore = this.options.now() - this.options.config.sessionIdleSeconds * 1000;
    for (const session of [...this.sessions.values()]) {
      if (session.streams > 0 || session.lastSeen > idleBefore) continue;
      this.sessions.delete(session.id);
      await session.transport.close().catch(() => undefined);
    }
  }

  /**
   * Whether a caller gets a tool: admin tools for the admin key and users; viewers the read-only
   * ones (not the QR, which links a phone); a routed token the tools whose every route takes it.
   */
  private async mayUse(tool: ToolDefinition, caller: Caller): Promise<boolean> {
    if (tool.adminOnly && caller.kind !== 'admin') return false;
    if (readOnly(caller) && (tool.effect !== 'read' || tool.linksPhone)) return false;
    if (caller.kind !== 'routed') return true;
    for (const route of tool.routes) {
      const [method = 'GET', path = '/'] = route.split(' ');
      if (!(await caller.accepts(method, path))) return false;
    }
    return true;
  }

  /** The input schema a caller sees: the admin key adds a required `instanceId` to instance tools. */
  private inputOf(tool: ToolDefinition, caller: Caller): TObject {
    if (caller.kind !== 'admin' || tool.adminOnly) return tool.input;
    return Type.Object({ instanceId: InstanceIdArgument, ...tool.input.properties }, { additionalProperties: false });
  }

  private validator(tool: ToolDefinition, caller: Caller): ValidateFunction {
    const id = `${caller.kind}:${tool.name}`;
    let validate = this.validators.get(id);
    if (!validate) {
      validate = this.ajv.compile(this.inputOf(tool, caller));
      this.validators.set(id, validate);
    }
    return validate;
  }

  /**
   * A server for whoever opened the session (or sent the stateless request). Each request acts as
   * its own caller (the HTTP layer's facts): the same key, or for a user the same person with a
   * fresh access token and their current role.
   */
  private buildServer(sdk: McpSdk, opener: Caller, subscriptions: Map<string, Subscription> | undefined): Server {
    const {
      CallToolRequestSchema,
      ErrorCode,
      GetPromptRequestSchema,
      ListPromptsRequestSchema,
      ListResourcesRequestSchema,
      ListResourceTemplatesRequestSchema,
      ListToolsRequestSchema,
      McpError,
      ReadResourceRequestSchema,
      SubscribeRequestSchema,
      UnsubscribeRequestSchema,
    } = sdk;
    const server = new sdk.Server(
      { name: 'waygate', title: 'Waygate (WhatsApp gateway)', version: VERSION },
      {
        capabilities: {
          tools: { listChanged: false },
          resources: { subscribe: subscriptions !== undefined, listChanged: false },
          prompts: { listChanged: false },
        },
        instructions: INSTRUCTIONS,
      },
    );
    const rest = this.options.rest;
    type Extra = { authInfo?: { extra?: Record<string, unknown> } };
    const factsOf = (extra: Extra) => extra.authInfo?.extra?.facts as RequestFacts | undefined;
    const callerOf = (extra: Extra) => factsOf(extra)?.caller ?? opener;
    const ownInstanceOf = (caller: Caller) => (caller.kind === 'instance' ? caller.instance.id : undefined);
    const restAs =
      (extra: Extra, instanceId: string | undefined) =>
      (call: RestCall, options: { admin?: boolean } = {}) => {
        const facts = factsOf(extra);
        return rest
          .call(callerOf(extra), call, {
            ...options,
            ...(instanceId ? { instanceId } : {}),
            ...(facts ? { remoteAddress: facts.remoteAddress } : {}),
          })
          .then((answer) => answer.body);
      };

    server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
      const caller = callerOf(extra);
      const tools: Tool[] = [];
      for (const tool of TOOLS) {
        if (!(await this.mayUse(tool, caller))) continue;
        tools.push({
          name: tool.name,
          title: tool.title,
          description: tool.description,
          inputSchema: JSON.parse(JSON.stringify(this.inputOf(tool, caller))) as Tool['inputSchema'],
          annotations: { title: tool.title, ...ANNOTATIONS[tool.effect] },
        });
      }
      return { tools };
    });

    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
      const caller = callerOf(extra);
      const tool = TOOLS.find((t) => t.name === request.params.name && (caller.kind === 'admin' || !t.adminOnly));
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
      // A viewer calling a tool it was not given: the REST API's answer to a viewer's write.
      if (!(await this.mayUse(tool, caller)) && readOnly(caller)) {
        const refusal = errors.readOnlyCaller();
        return toolError(refusal.message, { code: refusal.code, status: refusal.status });
      }
      const args = structuredClone<Record<string, unknown>>(request.params.arguments ?? {});
      const validate = this.validator(tool, caller);
      if (!validate(args)) return toolError(`invalid arguments: ${describe(validate.errors)}`, { code: 'bad_request', status: 400 });
      let instanceId = ownInstanceOf(caller);
      if (caller.kind === 'admin' && !tool.adminOnly) {
        instanceId = String(args.instanceId);
        delete args.instanceId;
      }
      const context: ToolContext = {
        caller,
        instanceId,
        rest: restAs(extra, instanceId),
        nextMessage: (id, chat, timeoutMs, signal) => this.nextMessage(id, chat, timeoutMs, signal),
        signal: extra.signal,
        progress: (progress, total, message) => {
          const progressToken = request.params._meta?.progressToken;
          if (progressToken === undefined) return;
          extra
            .sendNotification({ method: 'notifications/progress', params: { progressToken, progress, total, message } })
            .catch((error: unknown) => this.options.log.debug({ err: error }, 'MCP progress not sent'));
        },
        waitMaxSeconds: this.options.config.waitMaxSeconds,
        embedMaxBytes: this.options.embedMaxBytes,
      };
      try {
        return await tool.run(args, context);
      } catch (error) {
        if (error instanceof RestFailure)
          return toolError(error.message, { ...(error.code ? { code: error.code } : {}), status: error.status });
        this.options.log.error({ err: error, tool: tool.name }, 'MCP tool failed');
        return toolError('internal error', { code: 'internal', status: 500 });
      }
    });

    const resourceRest = (extra: Extra, instanceId: string) => {
      const caller = callerOf(extra);
      if (caller.kind !== 'admin' && instanceId !== ownInstanceOf(caller))
        throw new McpError(ErrorCode.InvalidParams, 'this key reaches its own instance only');
      return restAs(extra, caller.kind === 'admin' ? instanceId : undefined);
    };
    const failureAsMcp = (error: unknown): never => {
      if (error instanceof RestFailure)
        throw new McpError(ErrorCode.InvalidParams, error.message, { code: error.code, status: error.status });
      if (error instanceof InvalidPromptArguments) throw new McpError(ErrorCode.InvalidParams, error.message);
      throw error;
    };

    server.setRequestHandler(ListResourcesRequestSchema, async (_request, extra) => {
      const caller = callerOf(extra);
      return { resources: await resourceList(caller, ownInstanceOf(caller), restAs(extra, undefined)).catch(failureAsMcp) };
    });
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: RESOURCE_TEMPLATES }));
    server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
      const target = parseResourceUri(request.params.uri);
      if (!target) throw new McpError(ErrorCode.InvalidParams, `unknown resource ${request.params.uri}`);
      const contents = await readResource(request.params.uri, target, resourceRest(extra, target.instanceId)).catch(failureAsMcp);
      return { contents };
    });
    if (subscriptions) {
      server.setRequestHandler(SubscribeRequestSchema, (request, extra) => {
        const caller = callerOf(extra);
        const target = parseResourceUri(request.params.uri);
        if (!target || target.kind === 'media')
          throw new McpError(
            ErrorCode.InvalidParams,
            `cannot subscribe to ${request.params.uri}: subscribe to a chat list or a chat's messages`,
          );
        if (caller.kind !== 'admin' && target.instanceId !== ownInstanceOf(caller))
          throw new McpError(ErrorCode.InvalidParams, 'this key reaches its own instance only');
        subscriptions.set(request.params.uri, {
          instanceId: target.instanceId,
          chat: target.kind === 'messages' ? target.chat : undefined,
        });
        return {};
      });
      server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
        subscriptions.delete(request.params.uri);
        return {};
      });
    }

    server.setRequestHandler(ListPromptsRequestSchema, (_request, extra) => ({
      prompts: PROMPTS.map((prompt) => ({
        ...prompt,
        arguments:
          callerOf(extra).kind === 'admin'
            ? [{ name: 'instanceId', description: 'The instance whose chat it is.', required: true }, ...prompt.arguments]
            : prompt.arguments,
      })),
    }));
    server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
      const caller = callerOf(extra);
      const args = request.params.arguments ?? {};
      const instanceId = caller.kind === 'admin' ? args.instanceId : ownInstanceOf(caller);
      if (!instanceId)
        throw new McpError(
          ErrorCode.InvalidParams,
          caller.kind === 'admin' ? 'instanceId is required with the admin key' : 'this key reads no chats',
        );
      return promptMessages(request.params.name, args, resourceRest(extra, instanceId)).catch(failureAsMcp);
    });
    return server;
  }
}

function describe(problems: ErrorObject[] | null | undefined): string {
  const problem = problems?.[0];
  if (!problem) return 'not valid';
  const where = problem.instancePath === '' ? 'arguments' : problem.instancePath.slice(1).replaceAll('/', '.');
  const extra =
    problem.keyword === 'additionalProperties'
      ? ` (${String((problem.params as { additionalProperty?: unknown }).additionalProperty)})`
      : '';
  return `${where} ${problem.message ?? 'is not valid'}${extra}`;
}

/** /sandbox control routes (admin key): act as the phones and contacts of the simulated network. */
import { Type } from 'typebox';
import { ADMIN, errorResponses } from '../http/schemas.js';
import type { RoutePlugin } from '../http/types.js';
import * as S from './schema.js';
import type { SandboxService } from './service.js';

const tags = ['sandbox'];
const admin = { access: 'admin' as const };

export function sandboxRoutes(sandbox: SandboxService): RoutePlugin {
  return async (app) => {
    app.post(
      '/sandbox/poll-votes',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'A contact votes in a poll',
          description:
            'The contact `from` votes `selectedOptions` (option names; empty withdraws the vote) in the poll `pollMessageId` that the sandbox instance with number `to` sent to `from`. The instance gets a MESSAGE with `pollUpdateMessage` (the options as SHA-256 hashes, decrypted) and `pollVote` (`pollMessageId`, `selectedOptions` names). 404 unknown instance or poll, 400 unknown options or more than the poll allows, 409 when the poll was sent to someone else.',
          body: S.PollVoteBody,
          response: { 200: Type.Object({ key: S.MessageKey, messageTimestamp: Type.Integer() }), ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => {
        const { from, to, pollMessageId, selectedOptions } = request.body;
        return sandbox.contactVotes(from, to, pollMessageId, selectedOptions);
      },
    );

    app.post(
      '/sandbox/scan',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Scan an instance QR code as a phone',
          description:
            'The virtual phone `number` scans the current QR of sandbox instance `instanceId`; the instance becomes CONNECTED with that number (CONNECTION event), then, when the account already has chats (linked before, to this or another instance), gets them with their latest messages as HISTORY_SYNC `INITIAL_BOOTSTRAP` events, as a real phone sends them. 409 when the instance shows no QR or the number is linked to another sandbox instance.',
          body: S.ScanBody,
          response: { 200: S.ConnectionReply, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => sandbox.scan(request.body.instanceId, request.body.number),
    );

    app.post(
      '/sandbox/pair',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Confirm a pairing code as a phone',
          description:
            'The virtual phone `number` enters the 8-digit code returned by POST /instance/pair; the instance becomes CONNECTED, then gets the chats of the account as HISTORY_SYNC `INITIAL_BOOTSTRAP` events (as with a scan). 404 for an unknown or expired code, 409 when the code was requested for another number.',
          body: S.PairBody,
          response: { 200: S.ConnectionReply, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => sandbox.confirmPairingCode(request.body.number, request.body.code),
    );

    app.post(
      '/sandbox/messages',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'A virtual contact sends a text to an instance',
          description:
            'The instance whose number is `to` receives a MESSAGE event from `from`. 404 when no connected sandbox instance has number `to`.',
          body: S.ContactMessageBody,
          response: { 200: S.ContactMessageReply, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => sandbox.contactSendsText(request.body.from, request.body.to, request.body.text),
    );

    app.post(
      '/sandbox/read',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'A contact reads messages an instance sent',
          description: 'Emits one READ_RECEIPT per message id to the instance whose number is `to`.',
          body: S.ReadBody,
          response: { 200: Type.Object({ receipts: Type.Integer() }), ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => sandbox.contactReads(request.body.from, request.body.to, request.body.messageIds),
    );

    app.post(
      '/sandbox/presence',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'A contact goes online/offline or types/records',
          description:
            'The virtual contact `from` shows a presence to the instance whose number is `to`: `available`/`unavailable` emit a PRESENCE event, `composing`/`recording`/`paused` a CHAT_PRESENCE event in their chat. 404 when no connected sandbox instance has number `to`.',
          body: S.PresenceBody,
          response: { 200: Type.Object({ event: Type.String() }), ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => sandbox.contactPresence(request.body.from, request.body.to, request.body.presence),
    );

    app.post(
      '/sandbox/calls',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'A contact calls an instance',
          description: 'Emits a CALL event with status `offer` to the instance whose number is `to`.',
          body: S.CallBody,
          response: { 200: Type.Object({ callId: Type.String() }), ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => sandbox.contactCalls(request.body.from, request.body.to, request.body.isVideo ?? false),
    );

    app.post(
      '/sandbox/contacts',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Set a virtual contact display name',
          description: "The name becomes the `pushName` of the contact's messages.",
          body: S.ContactBody,
          response: { 200: Type.Object({ number: Type.String(), pushName: Type.String() }), ...errorResponses(401, 403) },
        },
      },
      async (request) => sandbox.setContactName(request.body.number, request.body.pushName),
    );

    app.post(
      '/sandbox/drop',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Drop an instance connection',
          description:
            'The instance loses its connection (CONNECTION `DISCONNECTED`, reason `connection_lost`) and reconnects by itself after SANDBOX_RECONNECT_DELAY_MS (CONNECTION `CONNECTING`, then `CONNECTED`, reason `reconnected`).',
          body: S.InstanceBody,
          response: { 200: S.ConnectionReply, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => sandbox.dropConnection(request.body.instanceId),
    );

    app.post(
      '/sandbox/logout',
      {
        config: admin,
        schema: {
          tags,
          security: ADMIN,
          summary: 'Log an instance out from the phone side',
          description:
            'As if the linked device was removed on the phone: CONNECTION `LOGGED_OUT`, reason `logged_out_from_phone`; the number is released and a new pairing is needed.',
          body: S.InstanceBody,
          response: { 200: S.ConnectionReply, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => sandbox.logoutFromPhone(request.body.instanceId),
    );
  };
}

/** /label routes: a business instance's labels and putting them on chats and messages. */
import { errorResponses, INSTANCE, Page, PagingQuery } from '../http/schemas.js';
import { callerInstance, type RoutePlugin } from '../http/types.js';
import * as S from './schema.js';
import type { LabelService } from './service.js';

const tags = ['label'];
const instance = { access: 'instance' as const };
/** Labels need a connected (409) WhatsApp Business account (403 for personal accounts) on a driver with labels (501). */
const refusals = [401, 403, 409, 501];

export function labelRoutes(labels: LabelService): RoutePlugin {
  return async (app) => {
    app.get(
      '/label/list',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'List labels',
          description:
            "The account's labels by id. Labels exist on WhatsApp Business accounts only: a personal account gets 403 on every /label route (on the sandbox network, make the instance's number a business account with POST /sandbox/accounts).",
          querystring: PagingQuery,
          response: { 200: Page(S.LabelSchema), ...errorResponses(...refusals) },
        },
      },
      async (request) => labels.list(callerInstance(request), request.query),
    );

    app.post(
      '/label/create',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Create a label',
          description:
            'At most 20 labels per account and unique names (409 otherwise). The instance gets LABEL `{ action: "create", label }`.',
          body: S.CreateBody,
          response: { 201: S.LabelSchema, ...errorResponses(...refusals) },
        },
      },
      async (request, reply) => reply.status(201).send(await labels.create(callerInstance(request), request.body.name, request.body.color)),
    );

    app.post(
      '/label/edit',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Rename or recolour a label',
          description: 'The instance gets LABEL `{ action: "edit", label }`. 404 unknown label, 409 name taken.',
          body: S.EditBody,
          response: { 200: S.LabelSchema, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => labels.edit(callerInstance(request), request.body.labelId, request.body),
    );

    app.post(
      '/label/delete',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Delete a label',
          description: 'The label also leaves every chat and message. The instance gets LABEL `{ action: "delete", label }`.',
          body: S.LabelBody,
          response: { 200: S.DeletedReply, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => labels.delete(callerInstance(request), request.body.labelId),
    );

    app.post(
      '/label/apply',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Put a label on a chat or a message',
          description:
            'On the chat, or on one of its messages when `messageId` is given. The instance gets LABEL `{ action: "apply", label, chatId, messageId? }` (not when the label was already there). 404 unknown label, chat or message. Filter chats by label with GET /chat/list?labelId=.',
          body: S.TargetBody,
          response: { 200: S.TargetReply, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => labels.apply(callerInstance(request), request.body, true),
    );

    app.post(
      '/label/remove',
      {
        config: instance,
        schema: {
          tags,
          security: INSTANCE,
          summary: 'Take a label off a chat or a message',
          description: 'The instance gets LABEL `{ action: "remove", label, chatId, messageId? }` (not when the label was not there).',
          body: S.TargetBody,
          response: { 200: S.TargetReply, ...errorResponses(...refusals, 404) },
        },
      },
      async (request) => labels.apply(callerInstance(request), request.body, false),
    );
  };
}

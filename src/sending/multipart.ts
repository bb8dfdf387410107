/**
 * multipart/form-data on the routes that take media. The form is turned into the route's JSON body
 * before validation, so both content types are validated by the one JSON schema:
 * - a text field is the body field of the same name; fields that are not strings in the schema are
 *   read as what they are (`true`, `5`, or JSON for objects and arrays: `cards`, `buttons`, `quoted`);
 *   an array of strings may also be given as the field repeated (`mentions=1...&mentions=2...`);
 * - a file fills the media object at its field name (`media`, `thumbnail`, `cards[0].media`), with
 *   the part's file name and type (a hint, as in JSON); its bytes ride beside it (media/upload.ts).
 * Files are read as they arrive, and reading stops with 413 as soon as one passes its route's cap
 * (the largest MEDIA_MAX_<KIND>_BYTES the field can take; the resolver then applies its kind's cap).
 */
import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { AppError, errors } from '../errors.js';
import { attachUpload } from '../media/upload.js';

/** What a route takes in a form: its JSON body schema and the file fields it accepts. */
export interface FormSpec {
  /** The JSON body schema (an object schema). */
  body: TSchema;
  /** File field names; `[]` stands for an index: `cards[].media`. */
  files: string[];
  /** Largest file, in bytes. */
  fileBytes: number;
  /** Largest sum of the files, in bytes (MEDIA_BODY_LIMIT_BYTES). */
  totalBytes: number;
}

/** Text fields are JSON of nested objects (a carousel's cards), far below this. */
const FIELD_BYTES = 1024 * 1024;
const MAX_FIELDS = 64;

interface PropertySchema {
  type?: string | string[];
  items?: PropertySchema;
}

function propertiesOf(schema: TSchema): Record<string, PropertySchema> {
  return (schema as { properties?: Record<string, PropertySchema> }).properties ?? {};
}

/** A text field as the JSON body would carry it; what cannot be read stays text for the validator to report. */
function fieldValue(name: string, text: string, property: PropertySchema | undefined): unknown {
  const type = Array.isArray(property?.type) ? property.type[0] : property?.type;
  switch (type ?? '') {
    case 'integer':
    case 'number':
      return /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text.trim()) ? Number(text) : text;
    case 'boolean':
      return text === 'true' ? true : text === 'false' ? false : text;
    case 'object':
    case 'array':
      if (type === 'array' && !text.trimStart().startsWith('[')) return [text];
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw errors.invalidMultipart(`field ${name} must be JSON (it is ${type === 'array' ? 'a list' : 'an object'})`);
      }
    default:
      return text;
  }
}

/** `cards[1].media` -> ['cards', 1, 'media']; undefined when the name is not a path. */
function pathOf(name: string): (string | number)[] | undefined {
  if (!/^[A-Za-z]\w*(\[\d{1,3}\]|\.\d{1,3}|\.[A-Za-z]\w*)*$/.test(name)) return undefined;
  const path: (string | number)[] = [];
  for (const match of name.matchAll(/([A-Za-z]\w*)|\[(\d+)\]|\.(\d+)/g)) {
    if (match[1] !== undefined) path.push(match[1]);
    else path.push(Number(match[2] ?? match[3]));
  }
  return path;
}

function template(path: (string | number)[]): string {
  return path.map((step, i) => (typeof step === 'number' ? '[]' : i === 0 ? step : `.${step}`)).join('');
}

interface UploadedFile {
  path: (string | number)[];
  name: string;
  data: Buffer;
  filename: string | undefined;
  mimetype: string | undefined;
}

/** Puts a file in its place in the body: the media object at its path, created when the JSON fields did not. */
function place(body: Record<string, unknown>, file: UploadedFile): void {
  let container: unknown = body;
  for (let i = 0; i < file.path.length - 1; i++) {
    const step = file.path[i]!;
    const next = (container as Record<string | number, unknown>)[step];
    const wanted = typeof file.path[i + 1] === 'number' ? 'list' : 'object';
    if (next === undefined && wanted === 'object' && !Array.isArray(container)) {
      (container as Record<string | number, unknown>)[step] = {};
    } else if (next === null || typeof next !== 'object' || Array.isArray(next) !== (wanted === 'list')) {
      const where = template(file.path.slice(0, i + 1)).replace(/\[\]/g, '');
      throw errors.invalidMultipart(
        `file ${file.name}: ${where} is not in the form (give it as a JSON field before using its file fields)`,
      );
    }
    container = (container as Record<string | number, unknown>)[step];
  }
  const last = file.path[file.path.length - 1]!;
  const existing = (container as Record<string | number, unknown>)[last];
  if (existing !== undefined && (existing === null || typeof existing !== 'object' || Array.isArray(existing))) {
    throw errors.invalidMultipart(`file ${file.name}: that field is also given as text`);
  }
  const media = (existing ?? {}) as Record<string, unknown>;
  if (media.filename === undefined && file.filename) media.filename = file.filename;
  if (media.mimetype === undefined && file.mimetype && file.mimetype !== 'application/octet-stream') media.mimetype = file.mimetype;
  attachUpload(media, file.data);
  (container as Record<string | number, unknown>)[last] = media;
}

/** busboy's and @fastify/multipart's own refusals, as declared codes. */
function formError(error: unknown, spec: FormSpec): AppError {
  if (error instanceof AppError) return error;
  const { code, message, statusCode } = error as { code?: string; message?: string; statusCode?: number };
  switch (code ?? '') {
    case 'FST_FILES_LIMIT':
      return errors.invalidMultipart(`too many files: this route takes at most ${spec.files.length === 1 ? 1 : 'one per media field'}`);
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return errors.invalidMultipart(`too many fields (at most ${MAX_FIELDS})`);
    case 'FST_REQ_FILE_TOO_LARGE':
      return errors.mediaTooLarge(`a file is larger than this route takes (${spec.fileBytes} bytes)`);
    default:
      if (statusCode === 413) return errors.bodyTooLarge(message ?? 'body too large');
      return errors.invalidMultipart(`the multipart/form-data body cannot be read: ${message ?? 'malformed'}`);
  }
}

/** Reads the form of `request` into the route's JSON body (files attached to their media objects). */
export async function formBody(request: FastifyRequest, spec: FormSpec): Promise<Record<string, unknown>> {
  const properties = propertiesOf(spec.body);
  const texts = new Map<string, string[]>();
  const files: UploadedFile[] = [];
  let total = 0;
  const maxFiles = spec.files.some((name) => name.includes('[]')) ? 10 : spec.files.length;
  try {
    const parts = request.parts({
      limits: { fileSize: spec.fileBytes, files: maxFiles, fields: MAX_FIELDS, fieldSize: FIELD_BYTES, parts: MAX_FIELDS + maxFiles },
    });
    for await (const part of parts) {
      if (part.type === 'field') {
        if (part.valueTruncated) throw errors.invalidMultipart(`field ${part.fieldname} is longer than ${FIELD_BYTES} bytes`);
        const list = texts.get(part.fieldname) ?? [];
        list.push(String(part.value));
        texts.set(part.fieldname, list);
        continue;
      }
      const path = pathOf(part.fieldname);
      if (!path || !spec.files.includes(template(path))) {
        throw errors.invalidMultipart(`file field ${part.fieldname} is not taken here; file fields: ${spec.files.join(', ')}`);
      }
      if (files.some((file) => file.name === part.fieldname)) throw errors.invalidMultipart(`file field ${part.fieldname} is given twice`);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of part.file as AsyncIterable<Buffer>) {
        size += chunk.length;
        total += chunk.length;
        if (total > spec.totalBytes)
          throw errors.bodyTooLarge(`the files are larger than ${spec.totalBytes} bytes (MEDIA_BODY_LIMIT_BYTES)`);
        chunks.push(chunk);
      }
      if (part.file.truncated) {
        throw errors.mediaTooLarge(
          `${part.fieldname} is larger than ${spec.fileBytes} bytes, the most this field takes (MEDIA_MAX_<KIND>_BYTES)`,
        );
      }
      files.push({
        path,
        name: part.fieldname,
        data: Buffer.concat(chunks, size),
        filename: part.filename || undefined,
        mimetype: part.mimetype || undefined,
      });
    }
  } catch (error) {
    throw formError(error, spec);
  }

  const body: Record<string, unknown> = {};
  for (const [name, values] of texts) {
    const property = properties[name];
    const type = Array.isArray(property?.type) ? property.type[0] : property?.type;
    if (values.length > 1) {
      if (type !== 'array') throw errors.invalidMultipart(`field ${name} is given ${values.length} times; it takes one value`);
      body[name] = values.map((value) => fieldValue(name, value, property?.items));
    } else {
      body[name] = fieldValue(name, values[0]!, property);
    }
  }
  for (const file of files) place(body, file);
  return body;
}

/** The form as the OpenAPI document shows it: the JSON fields as text, the files as binary. */
export function formSchema(spec: Pick<FormSpec, 'body' | 'files'>): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const fileRoots = new Set(spec.files.filter((name) => !name.includes('[]') && !name.includes('.')));
  for (const [name, property] of Object.entries(propertiesOf(spec.body))) {
    const { description } = property as { description?: string };
    if (fileRoots.has(name)) continue;
    const type = Array.isArray(property.type) ? property.type[0] : property.type;
    properties[name] =
      type === 'object' || type === 'array'
        ? {
            type: 'string',
            contentMediaType: 'application/json',
            description: `${description ? `${description} ` : ''}As JSON text${type === 'array' && property.items?.type === 'string' ? ' (or the field repeated, one item each)' : ''}.`,
          }
        : property;
  }
  for (const name of spec.files) {
    const shown = name.replace('[]', '[0]');
    properties[shown] = {
      type: 'string',
      format: 'binary',
      description: name.includes('[]')
        ? `The file of one item, by its index: \`${name.replace('[]', '[0]')}\`, \`${name.replace('[]', '[1]')}\`, ... (the item itself is in the JSON field).`
        : 'The file. Its file name and type are taken as `filename` and `mimetype` (the type is still sniffed from the bytes).',
    };
  }
  const required = ((spec.body as { required?: string[] }).required ?? []).filter((name) => name in properties);
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}) };
}

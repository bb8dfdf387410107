/** The Send tab: a recipient, a kind picker, and the kind's form drawn from SEND_KINDS (web/src/send-kinds.ts). */
import { useState } from 'preact/hooks';
import { instanceApi } from '../api';
import {
  CHAT_OPTIONS,
  initialValues,
  ITEM_KEY,
  newGroupItem,
  requestBody,
  SEND_KINDS,
  sendBody,
  type FieldSpec,
  type SendKind,
  type Value,
  type Values,
} from '../send-kinds';
import { ActionForm, Done, ErrorBox, Field, useAction } from '../ui';
import type { Instance } from './instances';

function FieldInput({ field, value, onChange }: { field: FieldSpec; value: Value; onChange: (value: Value) => void }) {
  const text = typeof value === 'string' ? value : '';
  if (field.type === 'checkbox')
    return (
      <label class="check">
        <input name={field.name} type="checkbox" checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} />{' '}
        {field.label}
      </label>
    );
  if (field.type === 'group') return <GroupInput field={field} items={Array.isArray(value) ? value : []} onChange={onChange} />;
  return (
    <Field label={field.label} hint={field.hint}>
      {field.type === 'textarea' || field.type === 'lines' ? (
        <textarea
          name={field.name}
          rows={field.type === 'lines' ? 4 : 3}
          required={field.required}
          placeholder={field.type === 'lines' ? field.placeholder : undefined}
          value={text}
          onInput={(e) => onChange(e.currentTarget.value)}
        />
      ) : field.type === 'select' ? (
        <select name={field.name} value={text} onChange={(e) => onChange(e.currentTarget.value)}>
          {field.options.map((option) => (
            <option key={option} value={option}>
              {option === '' ? 'detect' : option}
            </option>
          ))}
        </select>
      ) : field.type === 'file' ? (
        <input
          name={field.name}
          type="file"
          required={field.required}
          accept={field.accept}
          onChange={(e) => onChange(e.currentTarget.files?.[0] ?? null)}
        />
      ) : (
        <input
          name={field.name}
          type={field.type}
          required={field.required}
          value={text}
          {...(field.type === 'number' ? { min: field.min, max: field.max, step: field.step ?? 1, inputMode: 'decimal' as const } : {})}
          {...(field.type === 'text' || field.type === 'url' ? { placeholder: field.placeholder } : {})}
          onInput={(e) => onChange(e.currentTarget.value)}
        />
      )}
    </Field>
  );
}

function GroupInput({
  field,
  items,
  onChange,
}: {
  field: Extract<FieldSpec, { type: 'group' }>;
  items: Values[];
  onChange: (value: Value) => void;
}) {
  const replace = (index: number, item: Values) => onChange(items.map((old, i) => (i === index ? item : old)));
  return (
    <fieldset class="group-field">
      <legend>
        {field.label} ({field.min} to {field.max})
      </legend>
      {items.map((item, index) => (
        <fieldset
          key={typeof item[ITEM_KEY] === 'string' ? item[ITEM_KEY] : index}
          class="group-item"
          aria-label={`${field.item} ${index + 1}`}
        >
          <legend>
            {field.item} {index + 1}
          </legend>
          <Fields fields={field.fields} values={item} onChange={(next) => replace(index, next)} />
          {items.length > field.min ? (
            <button type="button" class="link" onClick={() => onChange(items.filter((_, i) => i !== index))}>
              Remove {field.item.toLowerCase()} {index + 1}
            </button>
          ) : null}
        </fieldset>
      ))}
      {items.length < field.max ? (
        <button type="button" onClick={() => onChange([...items, newGroupItem(field.fields)])}>
          Add {field.item.toLowerCase()}
        </button>
      ) : null}
    </fieldset>
  );
}

function Fields({ fields, values, onChange }: { fields: FieldSpec[]; values: Values; onChange: (values: Values) => void }) {
  return (
    <>
      {fields.map((field) => (
        <FieldInput
          key={field.name}
          field={field}
          value={values[field.name] ?? null}
          onChange={(value) => onChange({ ...values, [field.name]: value })}
        />
      ))}
    </>
  );
}

interface SendReply {
  key?: { id: string };
  status?: string;
  batchId?: string;
  total?: number;
}

function KindForm({ kind, instance, to }: { kind: SendKind; instance: Instance; to: string }) {
  const [values, setValues] = useState<Values>(() => initialValues(kind.fields));
  const [options, setOptions] = useState<Values>(() => initialValues(CHAT_OPTIONS));
  const [result, setResult] = useState<string | undefined>();
  const send = useAction(async () => {
    setResult(undefined);
    const reply = await instanceApi<SendReply>(instance.instanceId, 'POST', kind.path, requestBody(sendBody(kind, values, options, to)));
    setResult(
      reply.key
        ? `${kind.label} sent: message id ${reply.key.id}${reply.status ? ` (${reply.status})` : ''}.`
        : `Batch ${reply.batchId ?? '?'} accepted: ${reply.total ?? 0} messages.`,
    );
  });
  return (
    <ActionForm label={`Send: ${kind.label}`} class="send-form" onSubmit={() => send.run()}>
      {kind.note ? <p class="muted">{kind.note}</p> : null}
      <Fields fields={kind.fields} values={values} onChange={setValues} />
      {kind.chatOptions ? (
        <details class="chat-options">
          <summary>Reply, mentions, typing delay</summary>
          <Fields fields={CHAT_OPTIONS} values={options} onChange={setOptions} />
        </details>
      ) : null}
      <button type="submit" class="primary" disabled={send.busy || (kind.recipient !== 'none' && to.trim() === '')}>
        Send {kind.label.toLowerCase()}
      </button>
      <Done>{result}</Done>
      <ErrorBox error={send.error} />
    </ActionForm>
  );
}

export function SendTab({ instance }: { instance: Instance }) {
  const [to, setTo] = useState('');
  const [kindKey, setKindKey] = useState('text');
  const kind = SEND_KINDS.find((k) => k.key === kindKey) ?? SEND_KINDS[0]!;
  return (
    <div class="card send">
      <h2>Send a message</h2>
      {instance.status !== 'CONNECTED' ? <p class="muted">The instance is not connected: sends answer an error until it is.</p> : null}
      <div class="fields-row">
        <Field label="To (number with country code, or group id)">
          <input name="to" value={to} disabled={kind.recipient === 'none'} onInput={(e) => setTo(e.currentTarget.value)} />
        </Field>
        <Field label="Kind">
          <select name="kind" value={kindKey} onChange={(e) => setKindKey(e.currentTarget.value)}>
            {SEND_KINDS.map((k) => (
              <option key={k.key} value={k.key}>
                {k.label}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <KindForm key={kind.key} kind={kind} instance={instance} to={to} />
    </div>
  );
}

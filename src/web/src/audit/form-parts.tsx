/** What the audit console's forms share: a labelled field, its error and the attributes that tie a control to it. */
import type { ComponentChildren } from 'preact';
import { auditWords } from './audit-api.js';

/** The attributes tying a control to its FieldError (`${id}-error`). */
export function described(id: string, message: string | undefined) {
  return message ? { 'aria-invalid': 'true' as const, 'aria-describedby': `${id}-error` } : {};
}

/** A field's error, or nothing. */
export function FieldError({ id, message }: { id: string; message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="form-error" id={`${id}-error`}>
      {message}
    </p>
  );
}

/** A control bound to one value, with its label and error. */
export interface ControlProps<V> {
  id: string;
  label: string;
  value: V;
  onChange: (value: V) => void;
  error: string | undefined;
}

/** A labelled control, its error below it. */
export function Field({
  id,
  label,
  error,
  class: className = 'audit-field',
  children,
}: {
  id: string;
  label: string;
  error?: string | undefined;
  class?: string;
  children: ComponentChildren;
}) {
  return (
    <div class={className}>
      <label for={id}>{label}</label>
      {children}
      <FieldError id={id} message={error} />
    </div>
  );
}

/** A request's error as an alert, in the audit console's words (auditWords); nothing without one. */
export function AuditAlert({ error }: { error: unknown }) {
  if (error === undefined) return null;
  return (
    <p class="form-error" role="alert">
      {auditWords(error)}
    </p>
  );
}

/** A small button of the console, secondary (`danger`: the one that confirms a deletion). */
export function SmallButton({
  onClick,
  danger,
  children,
}: {
  onClick: () => void;
  danger?: boolean;
  children: ComponentChildren;
}) {
  return (
    <button
      type="button"
      class={danger ? 'button button-small button-danger' : 'button button-secondary button-small'}
      onClick={onClick}
    >
      {children}
    </button>
  );
}

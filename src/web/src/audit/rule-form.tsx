/**
 * The alert rule form (issue 15 "Alerts and rules": a form that cannot produce an invalid
 * condition). Choices are controls that offer only what the hub accepts — services, results,
 * days, severities and time zones as lists, times from time pickers, a window as a number and a
 * unit — and the few things typed (name, values, count, window) are checked against the hub's
 * limits before anything is sent (rule-draft.ts). The hub's 400 and 409 field errors are shown
 * beside their fields all the same.
 */
import type { ComponentChildren } from 'preact';
import { useMemo, useRef, useState } from 'preact/hooks';
import { type MessageKey, t } from '../i18n/index.js';
import { auditJson, auditWords, fieldError } from './audit-api.js';
import type { AlertRule } from './audit-types.js';
import { type ControlProps, described, FieldError, Field as FormField } from './form-parts.js';
import {
  DAYS,
  dayName,
  draftProblems,
  LIMITS,
  RESULTS,
  type RuleDraft,
  ruleBody,
  SEVERITIES,
  type TextMatchDraft,
  WINDOW_UNITS,
  type WindowUnit,
} from './rule-draft.js';
import { TagInput } from './tag-input.js';

const UNIT_WORDS: Record<WindowUnit, MessageKey> = {
  s: 'audit.unit.s',
  m: 'audit.unit.m',
  h: 'audit.unit.h',
  d: 'audit.unit.d',
};
const whenWords = () =>
  [
    ['outside', t('audit.outsideTimes')],
    ['inside', t('audit.insideTimes')],
  ] as const;
const perWords = () =>
  [
    ['actor', t('audit.perActor')],
    ['overall', t('audit.overall')],
  ] as const;

function timeZones(): string[] {
  try {
    return ['UTC', ...Intl.supportedValuesOf('timeZone').filter((z) => z !== 'UTC')];
  } catch {
    return ['UTC'];
  }
}

export function RuleForm({
  initial,
  ruleId,
  services,
  serviceLabel,
  hubTimeZone,
  onSaved,
  onCancel,
}: {
  initial: RuleDraft;
  /** Editing this rule (PUT); else a new one (POST). */
  ruleId?: string | undefined;
  services: readonly string[];
  serviceLabel: (service: string) => string;
  /** ALERT_TIME_ZONE, when the hub says. */
  hubTimeZone: string | undefined;
  onSaved: (rule: AlertRule) => void;
  onCancel: () => void;
}) {
  const [d, setDraft] = useState<RuleDraft>(initial);
  const [tried, setTried] = useState(false);
  const [sending, setSending] = useState(false);
  const [serverError, setServerError] = useState<unknown>();
  const form = useRef<HTMLFormElement>(null);
  const zones = useMemo(timeZones, []);
  const set = (patch: Partial<RuleDraft>) => {
    setDraft((prev) => ({ ...prev, ...patch }));
    // The hub's word was about what was sent; a change makes it stale.
    setServerError(undefined);
  };
  const problems = draftProblems(d);
  /** The hub's word on a field wins; the form's own shows live, the name's after a first try. */
  const err = (field: string): string | undefined =>
    fieldError(serverError, field) ?? (field !== 'name' || tried ? problems[field] : undefined);
  /** A control's value and its change; with bind, its error too (`field`, as the hub names it). */
  const pick = <K extends keyof RuleDraft>(key: K) => ({
    value: d[key],
    onChange: (value: RuleDraft[K]) => set({ [key]: value } as Partial<RuleDraft>),
  });
  const bind = <K extends keyof RuleDraft>(key: K, field: string) => ({ ...pick(key), error: err(field) });
  const choices = [...new Set([...services, ...d.services])];
  const unmapped =
    serverError !== undefined &&
    !['name', 'description', 'severity', 'enabled', 'condition'].some((f) => fieldError(serverError, f));

  const submit = (e: Event) => {
    e.preventDefault();
    setTried(true);
    if (Object.keys(problems).length) {
      form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
      return;
    }
    setSending(true);
    setServerError(undefined);
    auditJson<AlertRule>(ruleId ? `/api/rules/${encodeURIComponent(ruleId)}` : '/api/rules', {
      method: ruleId ? 'PUT' : 'POST',
      body: ruleBody(d),
    }).then(
      (rule) => {
        setSending(false);
        onSaved(rule);
      },
      (error: unknown) => {
        setSending(false);
        setServerError(error);
      },
    );
  };

  return (
    <form ref={form} class="panel rule-form" aria-labelledby="rule-form-title" onSubmit={submit} noValidate>
      <h2 id="rule-form-title">
        {ruleId ? t('audit.editNamed', { name: initial.name }) : t('mesh.alerts.newRule')}
      </h2>
      <div class="rule-grid">
        <Field id="r-name" label={t('audit.name')} error={err('name')}>
          <input
            id="r-name"
            type="text"
            value={d.name}
            maxLength={LIMITS.name}
            required
            onInput={(e) => set({ name: e.currentTarget.value })}
            {...described('r-name', err('name'))}
          />
        </Field>
        <SelectField
          id="r-severity"
          label={t('audit.severity')}
          options={SEVERITIES.map((s) => [s, s] as const)}
          {...pick('severity')}
        />
        <Field id="r-description" label={t('audit.descriptionOptional')} error={err('description')} wide>
          <textarea
            id="r-description"
            rows={2}
            value={d.description}
            maxLength={LIMITS.description}
            onInput={(e) => set({ description: e.currentTarget.value })}
            {...described('r-description', err('description'))}
          />
        </Field>
        <Toggle class="check rule-wide" checked={d.enabled} onChange={(enabled) => set({ enabled })}>
          {t('audit.onEvaluatedForNew')}
        </Toggle>
      </div>

      <fieldset class="rule-part">
        <legend>{t('audit.whichEventsEveryPart')}</legend>
        <Checks
          legend={t('audit.servicesNoneAny')}
          options={choices}
          name={serviceLabel}
          errorId="r-services"
          {...bind('services', 'condition.services')}
          attrs={described('r-services', err('condition.services'))}
        />
        <TextMatch
          id="r-operation"
          label={t('audit.operation')}
          {...bind('operation', 'condition.operation')}
        />
        <TextMatch id="r-actor" label={t('audit.actor')} {...bind('actor', 'condition.actor')} />
        <Checks
          legend={t('audit.resultNoneAny')}
          options={RESULTS}
          name={(r) => r}
          errorId="r-result"
          {...bind('results', 'condition.result')}
        />
      </fieldset>

      <fieldset class="rule-part">
        <legend>
          <Toggle checked={d.timeOn} onChange={(timeOn) => set({ timeOn })}>
            {t('audit.onlyAtCertainTimes')}
          </Toggle>
        </legend>
        {d.timeOn && (
          <>
            <SelectField
              id="r-when"
              label={t('audit.eventsThatHappen')}
              options={whenWords()}
              {...pick('when')}
            />
            <Checks
              legend={t('audit.days')}
              options={DAYS}
              name={dayName}
              errorId="r-days"
              {...bind('days', 'condition.time.days')}
              error={err('condition.time.days') ?? err('condition.time')}
              attrs={described('r-days', err('condition.time'))}
            />
            <div class="rule-grid">
              <TimeField
                id="r-from"
                label={t('audit.fromEmptyStartOf')}
                {...bind('from', 'condition.time.from')}
              />
              <TimeField id="r-to" label={t('audit.untilEmptyEndOf')} {...bind('to', 'condition.time.to')} />
              <SelectField
                id="r-zone"
                label={t('audit.timeZone')}
                error={err('condition.time.time_zone')}
                value={d.timeZone}
                options={[
                  ['', t('audit.hubTimeZone', { zone: hubTimeZone ?? 'ALERT_TIME_ZONE' })],
                  ...zones.map((z) => [z, z] as const),
                ]}
                onChange={(timeZone) => set({ timeZone })}
              />
            </div>
          </>
        )}
      </fieldset>

      <fieldset class="rule-part">
        <legend>
          <Toggle checked={d.thresholdOn} onChange={(thresholdOn) => set({ thresholdOn })}>
            {t('audit.onlyAfterSeveralEvents')}
          </Toggle>
        </legend>
        {!d.thresholdOn && <p class="muted small">{t('audit.withoutEveryMatchingEvent')}</p>}
        {d.thresholdOn && (
          <div class="rule-grid">
            <Field id="r-count" label={t('audit.atLeastThisMany')} error={err('condition.threshold.count')}>
              <input
                id="r-count"
                type="number"
                inputMode="numeric"
                min={1}
                max={LIMITS.count}
                step={1}
                value={d.count}
                onInput={(e) => set({ count: e.currentTarget.value })}
                {...described('r-count', err('condition.threshold.count'))}
              />
            </Field>
            <Field id="r-window" label={t('audit.within')} error={err('condition.threshold.window')}>
              <span class="rule-window">
                <input
                  id="r-window"
                  type="number"
                  inputMode="numeric"
                  min={1}
                  step={1}
                  value={d.windowValue}
                  onInput={(e) => set({ windowValue: e.currentTarget.value })}
                  {...described('r-window', err('condition.threshold.window'))}
                />
                <Select
                  aria-label={t('audit.unitOfTheWindow')}
                  value={d.windowUnit}
                  options={(Object.keys(WINDOW_UNITS) as WindowUnit[]).map(
                    (u) => [u, t(UNIT_WORDS[u])] as const,
                  )}
                  onChange={(windowUnit) => set({ windowUnit })}
                />
              </span>
            </Field>
            <SelectField id="r-per" label={t('audit.counted')} options={perWords()} {...pick('per')} />
          </div>
        )}
      </fieldset>

      {unmapped && (
        <p class="form-error" role="alert">
          {auditWords(serverError)}
        </p>
      )}
      <div class="dialog-buttons">
        <button type="submit" class="button" disabled={sending}>
          {sending ? 'Saving…' : ruleId ? 'Save changes' : 'Create rule'}
        </button>
        <button type="button" class="button button-secondary" onClick={onCancel}>
          {t('audit.cancel')}
        </button>
      </div>
    </form>
  );
}

/** A field of the rule form (two to a row; `wide`: a row of its own). */
function Field({ wide, ...props }: Parameters<typeof FormField>[0] & { wide?: boolean }) {
  return (
    <FormField class={wide ? 'audit-field rule-field rule-wide' : 'audit-field rule-field'} {...props} />
  );
}

function TimeField({ id, label, value, onChange, error }: ControlProps<string>) {
  return (
    <Field id={id} label={label} error={error}>
      <input
        id={id}
        type="time"
        value={value}
        onInput={(e) => onChange(e.currentTarget.value)}
        {...described(id, error)}
      />
    </Field>
  );
}

/** A select over `options` ([value, words] pairs). */
function Select<T extends string>({
  id,
  'aria-label': ariaLabel,
  value,
  options,
  onChange,
}: {
  id?: string;
  'aria-label'?: string;
  value: T;
  options: readonly (readonly [T, string])[];
  onChange: (value: T) => void;
}) {
  return (
    <select
      id={id}
      aria-label={ariaLabel}
      value={value}
      onChange={(e) => onChange(e.currentTarget.value as T)}
    >
      {options.map(([v, words]) => (
        <option key={v} value={v}>
          {words}
        </option>
      ))}
    </select>
  );
}

function SelectField<T extends string>({
  id,
  label,
  error,
  ...select
}: {
  id: string;
  label: string;
  error?: string | undefined;
  value: T;
  options: readonly (readonly [T, string])[];
  onChange: (value: T) => void;
}) {
  return (
    <Field id={id} label={label} error={error}>
      <Select id={id} {...select} />
    </Field>
  );
}

/** A checkbox with its words. */
function Toggle({
  class: className = 'check',
  checked,
  onChange,
  children,
}: {
  class?: string;
  checked: boolean;
  onChange: (checked: boolean) => void;
  children: ComponentChildren;
}) {
  return (
    <label class={className}>
      <input type="checkbox" checked={checked} onChange={(e) => onChange(e.currentTarget.checked)} />{' '}
      {children}
    </label>
  );
}

/** A checkbox for each of `options`; `selected` are the ticked ones. */
function Checks<T extends string>({
  legend,
  options,
  value: selected,
  name,
  onChange,
  errorId,
  error,
  attrs,
}: {
  legend: string;
  options: readonly T[];
  value: readonly T[];
  name: (option: T) => string;
  onChange: (selected: T[]) => void;
  errorId: string;
  error: string | undefined;
  attrs?: ReturnType<typeof described>;
}) {
  return (
    <fieldset class="rule-checks" {...attrs}>
      <legend>{legend}</legend>
      {options.map((o) => (
        <label key={o} class="check">
          <input
            type="checkbox"
            checked={selected.includes(o)}
            onChange={(e) =>
              onChange(e.currentTarget.checked ? [...selected, o] : selected.filter((x) => x !== o))
            }
          />{' '}
          {name(o)}
        </label>
      ))}
      <FieldError id={errorId} message={error} />
    </fieldset>
  );
}

function TextMatch({ id, label, value, onChange, error }: ControlProps<TextMatchDraft>) {
  return (
    <div class="rule-text-match">
      <label for={`${id}-mode`} class="visually-hidden">
        {t('audit.howMatches', { label })}
      </label>
      <select
        id={`${id}-mode`}
        value={value.mode}
        onChange={(e) => onChange({ ...value, mode: e.currentTarget.value as TextMatchDraft['mode'] })}
      >
        <option value="contains">{t('audit.contains', { label })}</option>
        <option value="equals">{t('audit.equals', { label })}</option>
      </select>
      <TagInput
        id={id}
        label={t('audit.anyOf', { label })}
        tags={value.values}
        suggestions={[]}
        onChange={(values) => onChange({ ...value, values })}
        error={error}
        placeholder={t('audit.typeAValueEnter')}
        maxLength={LIMITS.text}
        max={LIMITS.values}
      />
    </div>
  );
}

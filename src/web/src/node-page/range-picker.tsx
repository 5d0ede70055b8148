/** The chart range: four presets and a custom from–to, kept in the URL so a range can be shared. */
import { useState } from 'preact/hooks';
import { FormAlert } from '../components/form-alert.js';
import { t } from '../i18n/index.js';
import {
  fromLocalInput,
  PRESETS,
  planHistory,
  type RangeChoice,
  rangeToQuery,
  toLocalInput,
} from '../lib/history-plan.js';

export function RangePicker({
  choice,
  onChoose,
}: {
  choice: RangeChoice;
  onChoose: (query: string) => void;
}) {
  const [custom, setCustom] = useState(choice.kind === 'custom');
  const initialEnd = choice.kind === 'custom' ? choice.end : Date.now();
  const initialStart = choice.kind === 'custom' ? choice.start : initialEnd - 3 * 86_400_000;
  const [from, setFrom] = useState(toLocalInput(initialStart));
  const [to, setTo] = useState(toLocalInput(initialEnd));
  const [error, setError] = useState<string>();
  const selected = custom ? 'custom' : choice.kind === 'preset' ? choice.preset : 'custom';

  const apply = (event: Event) => {
    event.preventDefault();
    const next: RangeChoice = { kind: 'custom', start: fromLocalInput(from), end: fromLocalInput(to) };
    const plan = planHistory(next, Date.now());
    if ('error' in plan) {
      setError(plan.error);
      return;
    }
    setError(undefined);
    onChoose(rangeToQuery(next));
  };

  return (
    <div class="range-picker">
      <fieldset class="segmented">
        <legend class="visually-hidden">{t('mesh.timeRange')}</legend>
        {PRESETS.map((p) => (
          <label key={p.preset} class={selected === p.preset ? 'selected' : ''}>
            <input
              type="radio"
              name="range"
              value={p.preset}
              checked={selected === p.preset}
              onChange={() => {
                setCustom(false);
                setError(undefined);
                onChoose(rangeToQuery({ kind: 'preset', preset: p.preset }));
              }}
            />
            {p.label}
          </label>
        ))}
        <label class={selected === 'custom' ? 'selected' : ''}>
          <input
            type="radio"
            name="range"
            value="custom"
            checked={selected === 'custom'}
            onChange={() => setCustom(true)}
          />
          {t('mesh.custom')}
        </label>
      </fieldset>
      {custom && (
        <form class="custom-range" onSubmit={apply} noValidate>
          <DateTimeInput label={t('mesh.from')} value={from} onValue={setFrom} />
          <DateTimeInput label={t('mesh.to')} value={to} onValue={setTo} />
          <button type="submit" class="button button-small">
            {t('mesh.show')}
          </button>
          <FormAlert message={error} />
        </form>
      )}
    </div>
  );
}

/** One end of the custom range: a labelled local date-time input. */
function DateTimeInput({
  label,
  value,
  onValue,
}: {
  label: string;
  value: string;
  onValue: (value: string) => void;
}) {
  return (
    <label>
      {label}
      <input
        type="datetime-local"
        value={value}
        onInput={(e) => onValue((e.target as HTMLInputElement).value)}
      />
    </label>
  );
}

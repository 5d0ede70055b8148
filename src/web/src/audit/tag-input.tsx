/**
 * A list of tags as removable chips and a text box with suggestions (a native datalist: works
 * with the keyboard and screen readers, and on phones). Enter or a comma adds what is typed.
 */
import { useState } from 'preact/hooks';

export function TagInput({
  id,
  label,
  tags,
  suggestions,
  onChange,
  error,
  placeholder = 'type a tag, Enter to add',
  maxLength,
  max,
}: {
  id: string;
  label: string;
  tags: string[];
  suggestions: readonly string[];
  onChange: (tags: string[]) => void;
  error?: string | undefined;
  placeholder?: string;
  /** Longest value the input takes. */
  maxLength?: number;
  /** Most values: the input is disabled at that many. */
  max?: number;
}) {
  const [text, setText] = useState('');
  const add = (raw: string) => {
    const next = raw
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t && !tags.includes(t));
    if (next.length) onChange([...tags, ...new Set(next)]);
    setText('');
  };
  const listId = `${id}-suggestions`;
  return (
    <div class="tag-input">
      <label for={id}>{label}</label>
      {tags.length > 0 && (
        <ul class="chips" aria-label={`${label}: chosen`}>
          {tags.map((tag) => (
            <li key={tag} class="chip">
              {tag}
              <button
                type="button"
                class="chip-remove"
                aria-label={`Remove ${tag}`}
                onClick={() => onChange(tags.filter((t) => t !== tag))}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <input
        id={id}
        type="text"
        list={listId}
        value={text}
        autocomplete="off"
        placeholder={placeholder}
        maxLength={maxLength}
        disabled={max !== undefined && tags.length >= max}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        onInput={(e) => {
          const value = e.currentTarget.value;
          if (value.endsWith(',')) add(value);
          else setText(value);
        }}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && text.trim()) {
            e.preventDefault();
            add(text);
          }
        }}
        onBlur={() => text.trim() && add(text)}
      />
      <datalist id={listId}>
        {suggestions
          .filter((s) => !tags.includes(s))
          .slice(0, 200)
          .map((s) => (
            <option key={s} value={s} />
          ))}
      </datalist>
      {error && (
        <p id={`${id}-error`} class="form-error">
          {error}
        </p>
      )}
    </div>
  );
}

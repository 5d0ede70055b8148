/** The `rel="next"` target of an RFC 8288 Link header (the history and message lists page with it). */
export function nextLink(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const link = /<([^>]*)>((?:\s*;\s*[a-zA-Z*-]+\s*=\s*(?:"[^"]*"|[^;,\s]*))*)/g;
  for (const match of header.matchAll(link)) {
    const params = match[2] ?? '';
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^;,\s]*))/i.exec(params);
    const values = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (values.includes('next')) return match[1];
  }
  return undefined;
}

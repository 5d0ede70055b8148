/** The audit console's tables: captions for screen readers only. */
import type { ComponentChildren } from 'preact';
import { DataTable } from '../components/data-table.js';

export function AuditTable(props: {
  testId: string;
  caption: string;
  columns: readonly string[];
  children: ComponentChildren;
}) {
  return (
    <DataTable
      wrapClass="audit-table-wrap"
      tableClass="audit-table"
      captionClass="visually-hidden"
      {...props}
    />
  );
}

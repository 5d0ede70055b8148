/** A message catalogue: areas of keys whose leaves are messages (`{{name}}` placeholders). */
export interface Catalogue {
  [key: string]: string | Catalogue;
}

// Placeholder; process-level tests build dist/ here.
export default async function setup(): Promise<void> {}

/** Why a Sigma rule is not loaded: reported at start-up by file, title and id, and nothing of it runs. */
export class SigmaRefusal extends Error {
  override readonly name = 'SigmaRefusal';
}

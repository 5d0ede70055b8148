/**
 * The shapes of the billing plugin's ids and amounts, with no other dependency: the HTTP schemas
 * (and through them the web UI's types) use them without pulling in the database or Node.
 */
export const PLAN_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,39}$/;
export const PRICE_PATTERN = /^(0|[1-9]\d{0,11})(\.\d{1,12})?$/;
export const CURRENCY_PATTERN = /^[A-Z][A-Z0-9]{2,5}$/;
export const SUBSCRIPTION_ID_PATTERN = /^sub_[0-9a-f]{16}$/;

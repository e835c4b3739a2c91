import type { SearchAttributeType } from '@temporalio/common';
import {
  ORDER_MAIL_SEARCH_ATTRIBUTES,
  type SearchAttributeKey,
} from '../../src/shared/orderMailSearchAttributes';

/** Type names as the CLI's `--search-attribute Name=Type` flag spells them. */
export type SearchAttributeTypeName =
  'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

export type SearchAttributeDefinitions = Record<string, SearchAttributeTypeName>;

/** The same types as the SDK spells them (`SearchAttributeType`), for `defineSearchAttributeKey`. */
export const sdkSearchAttributeType = {
  Keyword: 'KEYWORD',
  Text: 'TEXT',
  Int: 'INT',
  Double: 'DOUBLE',
  Bool: 'BOOL',
  Datetime: 'DATETIME',
  KeywordList: 'KEYWORD_LIST',
} as const satisfies Record<SearchAttributeTypeName, SearchAttributeType>;

/**
 * The dev server's `--search-attribute` flags for `keys` (by default the attributes the workflows upsert,
 * src/shared/orderMailSearchAttributes.ts). The flags only take effect when the server creates the namespace; for a
 * server that already runs, use `ensureSearchAttributes` (src/temporal/searchAttributeRegistration.ts).
 */
export function devServerSearchAttributes(
  keys: readonly SearchAttributeKey[] = ORDER_MAIL_SEARCH_ATTRIBUTES,
): SearchAttributeDefinitions {
  const typeNames = Object.entries(sdkSearchAttributeType) as [
    SearchAttributeTypeName,
    SearchAttributeType,
  ][];
  return Object.fromEntries(
    keys.map((key) => {
      const typeName = typeNames.find(([, sdkType]) => sdkType === key.type)?.[0];
      if (typeName === undefined)
        throw new Error(`unknown search attribute type "${key.type}" for ${key.name}`);
      return [key.name, typeName];
    }),
  );
}

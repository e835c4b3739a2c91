import { isGrpcServiceError, type Connection } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';

/** Type names as the CLI's `--search-attribute Name=Type` flag spells them. */
export type SearchAttributeTypeName =
  'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

export type SearchAttributeDefinitions = Record<string, SearchAttributeTypeName>;

/**
 * The custom search attributes this project's workflows upsert (for the Web UI's filters). Every server the
 * workers use must have them registered first; deploy/stack.env lists the same for the production stack
 * (checked by test/stack/composeDrift.test.ts).
 */
export const ORDER_MAIL_SEARCH_ATTRIBUTES: SearchAttributeDefinitions = { OrderMailState: 'Keyword' };

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

// gRPC status code; @grpc/grpc-js, which names it, is not a direct dependency.
const GRPC_ALREADY_EXISTS = 6;

/**
 * Registers custom search attributes on a server we did not start (e.g. `TEMPORAL_ADDRESS`). The dev server
 * registers them from flags, but only when it creates the namespace; elsewhere they must be added through
 * the operator API. A workflow that upserts an unregistered attribute hangs instead of failing, so this runs
 * before any worker.
 */
export async function ensureSearchAttributes(
  connection: Connection,
  namespace: string,
  definitions: SearchAttributeDefinitions,
): Promise<void> {
  // One request per name. Server 1.29 with SQL visibility (the dev server) skips names that exist, but other
  // versions and stores answer ALREADY_EXISTS, and a rejected request would not add the new names in it.
  for (const [name, type] of Object.entries(definitions)) {
    const indexedType = encodeSearchAttributeIndexedValueType(sdkSearchAttributeType[type]);
    if (indexedType === undefined) throw new Error(`unknown search attribute type "${type}" for ${name}`);
    try {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: { [name]: indexedType },
      });
    } catch (error) {
      // Already registered (setup runs on every test run): success. A different type under the same name
      // is not detected here.
      if (!(isGrpcServiceError(error) && Number(error.code) === GRPC_ALREADY_EXISTS)) throw error;
    }
  }
}

// Registers (setup, tests) and checks (the worker at start) the custom search attributes.
import { isGrpcServiceError, type Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ORDER_MAIL_SEARCH_ATTRIBUTES, type SearchAttributeKey } from '../shared/orderMailSearchAttributes';

type Key = SearchAttributeKey;

/** The operator service of a client `Connection` or a worker's `NativeConnection`: both have one. */
export interface HasOperatorService {
  operatorService: Pick<Connection['operatorService'], 'addSearchAttributes' | 'listSearchAttributes'>;
}

// gRPC status code; @grpc/grpc-js, which names it, is not a direct dependency.
const GRPC_ALREADY_EXISTS = 6;

export class SearchAttributesMissingError extends Error {
  override readonly name = 'SearchAttributesMissingError';
  readonly code = 'ERR_SEARCH_ATTRIBUTES_MISSING';
  constructor(
    readonly namespace: string,
    readonly missing: readonly Key[],
    readonly wrongType: readonly Key[],
  ) {
    const describe = (keys: readonly Key[]) => keys.map((key) => `${key.name} (${key.type})`).join(', ');
    super(
      [
        `The Temporal namespace "${namespace}" is not set up for the order mail workflows.`,
        missing.length > 0 ? `Not registered: ${describe(missing)}.` : '',
        wrongType.length > 0 ? `Registered with another type: ${describe(wrongType)}.` : '',
        'A workflow that upserts an unregistered search attribute hangs instead of failing, so this worker',
        'does not start. Run `npm run setup` against this namespace (it registers them and can be run any',
        'number of times), then start the worker again.',
      ]
        .filter((line) => line !== '')
        .join(' '),
    );
  }
}

/** One request per name: some servers answer ALREADY_EXISTS for the whole request (docs/design.md §6). */
export async function ensureSearchAttributes(
  connection: HasOperatorService,
  namespace: string,
  keys: readonly Key[] = ORDER_MAIL_SEARCH_ATTRIBUTES,
): Promise<void> {
  for (const key of keys) {
    try {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: { [key.name]: indexedValueType(key) },
      });
    } catch (error) {
      if (!(isGrpcServiceError(error) && Number(error.code) === GRPC_ALREADY_EXISTS)) throw error;
    }
  }
  // A registered name with another type is not something setup may silently change: say so.
  const problems = await findSearchAttributeProblems(connection, namespace, keys);
  if (problems.missing.length > 0 || problems.wrongType.length > 0) {
    throw new SearchAttributesMissingError(namespace, problems.missing, problems.wrongType);
  }
}

/** Which of `keys` the namespace lacks, and which it has under another type. */
async function findSearchAttributeProblems(
  connection: HasOperatorService,
  namespace: string,
  keys: readonly Key[] = ORDER_MAIL_SEARCH_ATTRIBUTES,
): Promise<{ missing: Key[]; wrongType: Key[] }> {
  const response = await connection.operatorService.listSearchAttributes({ namespace });
  const registered: Record<string, unknown> = {
    ...(response.systemAttributes ?? {}),
    ...(response.customAttributes ?? {}),
  };
  const missing = keys.filter((key) => registered[key.name] === undefined);
  const wrongType = keys.filter(
    (key) =>
      registered[key.name] !== undefined && Number(registered[key.name]) !== Number(indexedValueType(key)),
  );
  return { missing, wrongType };
}

/** Throws SearchAttributesMissingError unless every attribute the workflows upsert is registered. */
export async function assertSearchAttributesRegistered(
  connection: HasOperatorService,
  namespace: string,
  keys: readonly Key[] = ORDER_MAIL_SEARCH_ATTRIBUTES,
): Promise<void> {
  const { missing, wrongType } = await findSearchAttributeProblems(connection, namespace, keys);
  if (missing.length > 0 || wrongType.length > 0) {
    throw new SearchAttributesMissingError(namespace, missing, wrongType);
  }
}

const IndexedValueType = temporal.api.enums.v1.IndexedValueType;

// The operator API's enum for each SDK type. The SDK has this table too, but only under its lib/ internals.
const INDEXED_VALUE_TYPES: Record<SearchAttributeType, temporal.api.enums.v1.IndexedValueType> = {
  [SearchAttributeType.TEXT]: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  [SearchAttributeType.KEYWORD]: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  [SearchAttributeType.INT]: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  [SearchAttributeType.DOUBLE]: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  [SearchAttributeType.BOOL]: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  [SearchAttributeType.DATETIME]: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  [SearchAttributeType.KEYWORD_LIST]: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

function indexedValueType(key: Key): temporal.api.enums.v1.IndexedValueType {
  return INDEXED_VALUE_TYPES[key.type];
}

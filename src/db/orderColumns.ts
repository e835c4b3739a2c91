// The columns of the demo's tables that migration 0030 granted the worker role, column by column. Since migration
// 0063 the service reads orders only through the order contract (orderContract.ts) and the workers lose these
// grants; the list stays for the older migrations, which a shop adopting this service still applies first
// (migrationPrerequisites.ts names what their owner must grant before them).
export const WORKER_READS_COLUMNS = {
  orders: ['id', 'customer_name', 'customer_email', 'ordered_at', 'status', 'confirmed_at'],
  order_items: ['order_id', 'line_no', 'product_name', 'quantity', 'unit_price_yen'],
} as const satisfies Record<string, readonly string[]>;

export type ShopTable = keyof typeof WORKER_READS_COLUMNS;

export const SHOP_TABLES = Object.keys(WORKER_READS_COLUMNS) as ShopTable[];

// The demo tables' columns migration 0030 granted the workers; 0063 revokes them, but older migrations still
// apply first on an adopting shop (migrationPrerequisites.ts).
export const WORKER_READS_COLUMNS = {
  orders: ['id', 'customer_name', 'customer_email', 'ordered_at', 'status', 'confirmed_at'],
  order_items: ['order_id', 'line_no', 'product_name', 'quantity', 'unit_price_yen'],
} as const satisfies Record<string, readonly string[]>;

export type ShopTable = keyof typeof WORKER_READS_COLUMNS;

export const SHOP_TABLES = Object.keys(WORKER_READS_COLUMNS) as ShopTable[];

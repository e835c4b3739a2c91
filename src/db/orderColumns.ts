// The columns of the shop's tables this service reads, and nothing else: the worker role is granted SELECT on
// exactly these (migration 0030, `npm run db:roles`), so a worker cannot read a card number, an address or a
// phone number the shop keeps beside them. Every read of the shop's tables lives in orders.ts and
// queries/confirmedOrdersWithoutMail.sql; a column added there is added here (and granted by a migration).
// The foreign keys of the mail tables point at orders.id: the migration login needs REFERENCES on it.

export const WORKER_READS_COLUMNS = {
  orders: ['id', 'customer_name', 'customer_email', 'ordered_at', 'status', 'confirmed_at'],
  order_items: ['order_id', 'line_no', 'product_name', 'quantity', 'unit_price_yen'],
} as const satisfies Record<string, readonly string[]>;

export type ShopTable = keyof typeof WORKER_READS_COLUMNS;

export const SHOP_TABLES = Object.keys(WORKER_READS_COLUMNS) as ShopTable[];

// The shop's orders a run sends mail for: Japanese customers and tea, one to four items each, inserted as the
// shop would (dev/devtools/shopOrders.ts).
import type { Database } from '../../src/db/pool';
import { insertOrder, type NewOrder } from '../devtools/shopOrders';

const CUSTOMERS = ['山田 太郎', '佐藤 花子', '鈴木 一郎', '高橋 美咲', '田中 健', '伊藤 さくら'];
const PRODUCTS: [string, number][] = [
  ['有機緑茶 100g', 1200],
  ['急須（常滑焼）', 5800],
  ['抹茶 30g', 2400],
  ['ほうじ茶 ティーバッグ 20個', 800],
];

export async function createOrders(
  db: Database,
  count: number,
  avoidOldWorkflowIds: boolean,
): Promise<string[]> {
  if (avoidOldWorkflowIds) {
    // A fresh database counts ids from 1 again, but an external Temporal may still hold workflows with those
    // ids (= workflow ids) from an earlier run, which would make the new starts "already started".
    await db.query(`SELECT setval(pg_get_serial_sequence('orders', 'id'), $1)`, [
      1_000_000 + Math.floor(Math.random() * 1_000_000_000),
    ]);
  }
  const ids: string[] = new Array<string>(count);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      const order: NewOrder = {
        customerName: CUSTOMERS[index % CUSTOMERS.length]!,
        customerEmail: `customer${index + 1}@example.com`,
        items: PRODUCTS.slice(0, 1 + (index % PRODUCTS.length)).map(([productName, unitPriceYen], line) => ({
          productName,
          quantity: 1 + ((index + line) % 3),
          unitPriceYen,
        })),
      };
      ids[index] = await insertOrder(db, order);
    }
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  return ids;
}

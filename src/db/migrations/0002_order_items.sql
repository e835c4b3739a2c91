-- v1.0 baseline. The lines of an order, as the confirmation mail lists them (development, tests, the demo;
-- production has its own). IF NOT EXISTS for the same reason as orders.
CREATE TABLE IF NOT EXISTS order_items (
    order_id        BIGINT  NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    line_no         INT     NOT NULL CHECK (line_no > 0),
    product_name    TEXT    NOT NULL,
    quantity        INT     NOT NULL CHECK (quantity > 0),
    unit_price_yen  BIGINT  NOT NULL CHECK (unit_price_yen >= 0),
    PRIMARY KEY (order_id, line_no)
);

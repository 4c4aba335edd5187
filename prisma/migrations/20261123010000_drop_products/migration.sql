-- Products (things sold beside admission) were modelled but never sold, created or read: the table
-- goes, and an event's productCount is 0 until products are part of the product.
DROP TABLE "products";

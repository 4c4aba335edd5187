-- An id drawn in the database, of the form src/ids.ts newId answers: the prefix, an underscore and
-- 22 base62 characters from a cryptographic source (gen_random_uuid's random bytes; the version and
-- variant bytes are skipped), without modulo bias (rejection sampling on 6-bit values). For the
-- statements that create a number of rows not known before they run, in one round trip (webhook
-- deliveries, one per subscribed endpoint).
CREATE OR REPLACE FUNCTION new_id(prefix text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  alphabet constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  bytes bytea;
  result text := '';
  v int;
BEGIN
  WHILE length(result) < 22 LOOP
    bytes := uuid_send(gen_random_uuid());
    FOR i IN 0..15 LOOP
      CONTINUE WHEN i = 6 OR i = 8;
      v := get_byte(bytes, i) & 63;
      IF v < 62 AND length(result) < 22 THEN
        result := result || substr(alphabet, v + 1, 1);
      END IF;
    END LOOP;
  END LOOP;
  RETURN prefix || '_' || result;
END
$$;

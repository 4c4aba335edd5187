-- Fails the statement (and so its transaction) with SQLSTATE `code` and `message` unless `ok`:
-- how one statement says "undo all of this", for a statement sent together with its COMMIT
-- (TransactionStatements.rowsThenCommit), whose answer the commit does not wait for. Codes of our
-- own are of class TS (src/services/inventory.ts: TS001 short of tickets, TS002 a missing row).
CREATE OR REPLACE FUNCTION raise_unless(ok boolean, code text, message text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message;
  END IF;
  RETURN true;
END
$$;

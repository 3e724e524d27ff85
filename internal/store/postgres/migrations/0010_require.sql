-- mediagen_require lets a statement refuse on the server: a guarded balance update queued in a
-- shared commit (sqldb/pipe.go) calls it with "my guard passed", so a refusal is the server's
-- error, which aborts the transaction, instead of an answer only the client could refuse. That
-- is what lets the whole batch travel in one round trip with its COMMIT: a refusal the server
-- raises can never be committed. The SQLSTATE is mediagen's own (class MG), never retried.
CREATE FUNCTION mediagen_require(ok boolean, what text) RETURNS boolean AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'mediagen: % refused', what USING ERRCODE = 'MG001';
    END IF;
    RETURN true;
END;
$$ LANGUAGE plpgsql;

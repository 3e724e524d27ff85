-- Every change to a task row is announced on the channel mediagen_tasks with the task's id,
-- so each replica's task cache forgets it at once (postgres/notify.go). Inserts are not
-- announced: a task nobody has read cannot be cached, and the create path stays free of the
-- commit-time lock that NOTIFY takes.
CREATE FUNCTION mediagen_task_changed() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('mediagen_tasks', OLD.id);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER tasks_notify AFTER UPDATE OR DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION mediagen_task_changed();

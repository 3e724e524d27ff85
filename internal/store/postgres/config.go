package postgres

import (
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
)

func pgconnConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: bad database URL %s: %w", redact(dsn), err)
	}
	return cfg, nil
}

// redact hides the password of a database URL in messages and logs.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparseable URL)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

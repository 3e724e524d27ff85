package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/mediagen-dev/mediagen/client"
)

const assetsUsage = `mediagen assets [--real-human] <command>:
  groups                                  list groups
  group-create NAME [--description TEXT]  make a virtual group
  group-get ID | group-delete ID          read / delete a group
  group-rename ID NAME                    rename a group
  create --group ID --url URL --type Image|Video|Audio [--name N] [--wait]
  list [--group ID] [--type T] [--status S]
  get ID | delete ID | rename ID NAME
  verify [--callback URL]                 real-human: start a verification, print the link, wait for the group`

func runAssets(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &cliEnv{stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("assets", flag.ContinueOnError)
	withUsage(fs, assetsUsage)
	e.register(fs, getenv)
	realHuman := fs.Bool("real-human", false, "use the real-human library (default: virtual)")
	desc := fs.String("description", "", "group-create: description")
	group := fs.String("group", "", "create, list: the group id")
	url := fs.String("url", "", "create: https source URL")
	typ := fs.String("type", "", "create, list: Image, Video or Audio")
	name := fs.String("name", "", "create: the asset's name")
	status := fs.String("status", "", "list: Processing, Active or Failed")
	wait := fs.Bool("wait", false, "create: wait until the asset is Active or Failed")
	callback := fs.String("callback", "", "verify: https CallbackURL")
	page := fs.Int("page", 0, "list, groups: page number")
	pos, err := parseFlags(fs, args, stdout, stderr, parse)
	if err != nil {
		return err
	}
	if len(pos) == 2 && pos[1] == "help" { // "assets list help"
		fs.SetOutput(stdout)
		fs.Usage()
		return flag.ErrHelp
	}
	if len(pos) == 0 {
		fmt.Fprintln(stderr, assetsUsage)
		return usageError{"assets: give a command"}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	lib := &c.Virtual().Library
	if *realHuman {
		lib = &c.RealHuman().Library
	}
	arg := func(i int) (string, error) {
		if len(pos) <= i {
			return "", usageError{fmt.Sprintf("assets %s: missing argument", pos[0])}
		}
		return pos[i], nil
	}
	var out any
	switch pos[0] {
	case "groups":
		out, err = lib.ListGroups(ctx, client.Page{PageNumber: *page})
	case "group-create":
		if *realHuman {
			return usageError{"assets group-create: real-human groups are made by a passed verification (assets verify)"}
		}
		var n string
		if n, err = arg(1); err == nil {
			out, err = c.Virtual().CreateGroup(ctx, n, *desc)
		}
	case "group-get":
		var id string
		if id, err = arg(1); err == nil {
			out, err = lib.GetGroup(ctx, id)
		}
	case "group-delete":
		var id string
		if id, err = arg(1); err == nil {
			out, err = lib.DeleteGroup(ctx, id)
		}
	case "group-rename":
		var id, n string
		if id, err = arg(1); err == nil {
			if n, err = arg(2); err == nil {
				out, err = lib.UpdateGroup(ctx, client.GroupUpdate{ID: id, Name: &n})
			}
		}
	case "create":
		if *group == "" || *url == "" || *typ == "" {
			return usageError{"assets create: --group, --url and --type are required"}
		}
		var a *client.Asset
		a, err = lib.CreateAsset(ctx, client.NewAsset{GroupID: *group, URL: *url, AssetType: *typ, Name: *name})
		if err == nil && *wait {
			a, err = lib.WaitAsset(ctx, a.ID, min(e.poll, 2*time.Second))
		}
		out = a
	case "list":
		out, err = lib.ListAssets(ctx, client.AssetFilter{GroupID: *group, AssetType: *typ, Status: *status, PageNumber: *page})
	case "get":
		var id string
		if id, err = arg(1); err == nil {
			out, err = lib.GetAsset(ctx, id)
		}
	case "delete":
		var id string
		if id, err = arg(1); err == nil {
			out, err = lib.DeleteAsset(ctx, id)
		}
	case "rename":
		var id, n string
		if id, err = arg(1); err == nil {
			if n, err = arg(2); err == nil {
				out, err = lib.UpdateAsset(ctx, id, n)
			}
		}
	case "verify":
		return e.verify(ctx, c, *callback)
	default:
		fmt.Fprintln(stderr, assetsUsage)
		return usageError{fmt.Sprintf("assets: unknown command %q", pos[0])}
	}
	if out != nil && (err == nil || pos[0] == "create") {
		if perr := e.printJSON(out); perr != nil {
			return perr
		}
	}
	return err
}

// verify runs the real-person verification from the tenant's side: start, show the link,
// poll validate-result/get until the user has finished.
func (e *cliEnv) verify(ctx context.Context, c *client.Client, callback string) error {
	s, err := c.RealHuman().CreateValidateSession(ctx, callback)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "open this link and complete the check (it expires at %s):\n%s\n", time.Unix(s.ExpiresAt, 0).Format(time.RFC3339), s.H5Link)
	for {
		g, err := c.RealHuman().ValidateResult(ctx, s.VerifyToken)
		if err == nil {
			return e.printJSON(map[string]string{"GroupId": g, "VerifyToken": s.VerifyToken})
		}
		if ae, ok := err.(*client.Error); !ok || ae.Code != "verification_pending" {
			return err
		}
		if err := sleepCtx(ctx, 2*time.Second); err != nil {
			return interrupted{"stopped waiting; the verification token is " + s.VerifyToken}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

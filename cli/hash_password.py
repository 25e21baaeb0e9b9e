"""`agentwatch hash-password`: a bcrypt hash for basic_auth_users in a web config file."""

from __future__ import annotations

import argparse
import getpass
import sys


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "hash-password",
        help="print the bcrypt hash of a password, for basic_auth_users in a web config file",
        description="Read a password (prompted twice on a terminal, else the first line of "
        "stdin) and print its bcrypt hash, as `htpasswd -nBC 10` would; the hash goes under "
        "basic_auth_users in the file that exporter.web_config_file or "
        "controller.web_config_file names.",
    )
    parser.add_argument(
        "--cost", type=int, default=10, choices=range(4, 16), metavar="4..15", help="bcrypt cost"
    )


def run(args: argparse.Namespace) -> int:
    from agentwatch.core.webconfig import hash_password

    if sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            print("agentwatch hash-password: the passwords differ", file=sys.stderr)
            return 1
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        print("agentwatch hash-password: empty password", file=sys.stderr)
        return 1
    try:
        print(hash_password(password.encode("utf-8"), args.cost))
    except ValueError as err:
        print(f"agentwatch hash-password: {err}", file=sys.stderr)
        return 1
    return 0

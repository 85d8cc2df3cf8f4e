"""Connection settings. The password below is fake, here to show the credential scan."""

DEFAULT_HOST = "db.internal"


def database_url(host=DEFAULT_HOST, name="stock"):
    return "postgresql://inventory:Zq8rT2vLw9pK4xN7@%s:5432/%s" % (host, name)


def port_of(url):
    tail = url.rsplit(":", 1)[1]
    return int(tail.split("/", 1)[0])
